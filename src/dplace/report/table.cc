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

}  // namespace

std::string FormatValue(sim::Objective objective, double value) {
  return objective == sim::Objective::kStep ? FormatSeconds(value) : Number(value);
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
  const bool step = problem.objective == sim::Objective::kStep;
  std::vector<std::vector<std::string>> rows = {
      {"placer", std::string(sim::ValueName(problem.objective)), "gap to bound", "feasible",
       "peak memory", "search time"}};
  for (size_t i = 0; i < results.size(); ++i) {
    const sim::Evaluation& e = results[i].evaluation;
    const double peak = PeakMemory(e);
    rows.push_back({(static_cast<int>(i) == best_index ? "* " : "  ") + results[i].placer,
                    step ? FormatSeconds(e.value) : Number(e.value), Number(100 * Gap(e), "%.1f%%"),
                    e.feasible ? "yes" : "no", FormatBytes(peak),
                    FormatSeconds(results[i].search_time_s)});
  }
  std::string out = RenderTable(rows);
  double bound = problem.LowerBound();
  for (const PlacerResult& r : results) bound = std::max(bound, r.evaluation.lower_bound);
  out += "lower bound: " + (step ? FormatSeconds(bound) : Number(bound)) + "\n";
  for (const PlacerResult& r : results) {
    if (!r.note.empty()) out += r.placer + ": " + r.note + "\n";
    if (!r.evaluation.feasible) out += r.placer + " is infeasible: " + r.evaluation.reason + "\n";
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
                    step ? FormatSeconds(r.busy_s) : Number(r.load),
                    FormatBytes(r.peak_memory_bytes), FormatBytes(r.memory_capacity_bytes)});
  }
  return RenderTable(rows);
}

}  // namespace dplace::report
