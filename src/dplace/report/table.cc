#include "dplace/report/table.h"

#include <algorithm>
#include <cstdio>

#include "dplace/base/units.h"

namespace dplace::report {
namespace {

std::string Number(double v, const char* format = "%.6g") {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

// What the robust columns are, under the table.
std::string RobustLine(const sim::RobustJudgement& j, const std::vector<PlacerResult>& results) {
  std::string line = "median and worst: over " + std::to_string(j.values.size()) +
                     " variants of the model (docs/semantics.md)";
  for (const PlacerResult& r : results) {
    if (!r.robust_optimised) continue;
    const std::string what = j.quantile == 1     ? "the worst"
                             : j.quantile == 0.5 ? "the median"
                                                 : "the " + Number(j.quantile) + " quantile";
    line += "; searches minimised " + what;
    break;
  }
  return line + "\n";
}

}  // namespace

std::string FormatValue(const sim::Problem& problem, double value) {
  return problem.times_in_seconds ? FormatSeconds(value) : Number(value);
}

std::vector<std::string> RobustHeader(const std::vector<PlacerResult>& results) {
  for (const PlacerResult& r : results) {
    if (!r.robust) continue;
    const std::string k = std::to_string(r.robust->values.size());
    return {"median of " + k, "worst of " + k};
  }
  return {};
}

std::vector<std::string> RobustCells(const sim::Problem& problem, const PlacerResult& result) {
  if (!result.robust) return {"-", "-"};
  const sim::RobustJudgement& j = *result.robust;
  // A plan infeasible on some variant (memory that overflows in another order) is marked.
  return {FormatValue(problem, j.median),
          FormatValue(problem, j.worst) + (j.feasible ? "" : " (infeasible)")};
}

std::string RenderTable(const std::vector<std::vector<std::string>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows) {
    width.resize(std::max(width.size(), row.size()));
    for (size_t i = 0; i < row.size(); ++i) width[i] = std::max(width[i], row[i].size());
  }
  std::string out;
  for (const auto& row : rows) {
    for (size_t i = 0; i < row.size(); ++i) {
      const std::string pad(width[i] - row[i].size(), ' ');
      out += i == 0 ? row[i] + pad : "  " + pad + row[i];
    }
    out += "\n";
  }
  return out;
}

std::string ComparisonTable(const sim::Problem& problem, const std::vector<PlacerResult>& results,
                            int best_index) {
  std::vector<std::vector<std::string>> rows = {
      {"placer", std::string(sim::ValueName(problem.objective))}};
  const std::vector<std::string> robust_head = RobustHeader(results);
  rows[0].insert(rows[0].end(), robust_head.begin(), robust_head.end());
  rows[0].insert(rows[0].end(), {"gap to bound", "feasible", "peak memory", "search time"});
  const double bound = run::LowerBound(problem, results);
  for (size_t i = 0; i < results.size(); ++i) {
    const sim::Evaluation& e = results[i].evaluation;
    const double peak = PeakMemory(e);
    std::vector<std::string> row = {
        (static_cast<int>(i) == best_index ? "* " : "  ") + results[i].placer,
        FormatValue(problem, e.value)};
    if (!robust_head.empty()) {
      const std::vector<std::string> cells = RobustCells(problem, results[i]);
      row.insert(row.end(), cells.begin(), cells.end());
    }
    row.insert(row.end(), {Number(100 * Gap(e.value, bound), "%.1f%%"), e.feasible ? "yes" : "no",
                           FormatBytes(peak), FormatSeconds(results[i].search_time_s)});
    rows.push_back(std::move(row));
  }
  std::string out = RenderTable(rows);
  out += "lower bound: " + FormatValue(problem, bound) + "\n";
  for (const PlacerResult& r : results) {
    if (!r.robust) continue;
    out += RobustLine(*r.robust, results);
    break;
  }
  for (const PlacerResult& r : results) {
    if (!r.note.empty()) out += r.placer + ": " + r.note + "\n";
    if (!r.evaluation.feasible) out += r.placer + " is infeasible: " + r.evaluation.reason + "\n";
    if (r.robust && !r.robust->feasible) {
      out += r.placer + " is infeasible on a variant: " + r.robust->reason + "\n";
    }
  }
  return out;
}

std::string DeviceTable(const sim::Problem& problem, const sim::Evaluation& e) {
  const bool step = e.objective == sim::Objective::kStep;
  std::vector<std::vector<std::string>> rows = {
      {"device", "kind", "ops", step ? "busy" : "load", "peak memory", "capacity"}};
  for (sim::DeviceId d{0}; d < problem.num_devices(); ++d) {
    const sim::DeviceReport& r = e.devices[d];
    rows.push_back({problem.c().device(d).name, problem.c().device(d).kind, std::to_string(r.ops),
                    FormatValue(problem, step ? r.busy_s : r.load),
                    FormatBytes(r.peak_memory_bytes), FormatBytes(r.memory_capacity_bytes)});
  }
  return RenderTable(rows);
}

}  // namespace dplace::report
