#include "dplace/report/result_json.h"

#include <algorithm>
#include <cmath>

namespace dplace::report {

double Gap(double value, double lower_bound) {
  if (value <= 0) return 0;
  return std::max(0.0, (value - lower_bound) / value);
}

double PeakMemory(const sim::Evaluation& e) {
  double peak = 0;
  for (const auto& d : e.devices) peak = std::max(peak, d.peak_memory_bytes);
  return peak;
}

Json ResultJson(const sim::Problem& problem, const PlacerResult& result, double lower_bound) {
  const sim::Evaluation& e = result.evaluation;
  Json devices = Json::array();
  for (sim::DeviceId d{0}; d < problem.num_devices(); ++d) {
    const sim::DeviceReport& r = e.devices[d];
    Json j = {
        {"name", problem.c().device(d).name}, {"kind", problem.c().device(d).kind}, {"ops", r.ops}};
    if (e.objective == sim::Objective::kStep) {
      j["busy_s"] = r.busy_s;
    } else {
      j["load"] = r.load;
    }
    j["peak_memory_bytes"] = r.peak_memory_bytes;
    j["memory_capacity_bytes"] =
        std::isfinite(r.memory_capacity_bytes) ? Json(r.memory_capacity_bytes) : Json(nullptr);
    devices.push_back(std::move(j));
  }
  Json out = {{"objective", sim::ObjectiveName(e.objective)},
              {"value", e.value},
              {"feasible", e.feasible},
              {"lower_bound", lower_bound},
              {"gap", Gap(e.value, lower_bound)},
              {"placer", result.placer},
              {"search_time_s", result.search_time_s},
              {"devices", devices}};
  if (!e.feasible) out["reason"] = e.reason;
  if (!result.note.empty()) out["note"] = result.note;
  if (!result.options.empty()) out["options"] = result.options;
  if (result.robust) out["robust"] = RobustJson(*result.robust, result.robust_optimised);
  if (result.measured_s) out["measured_s"] = *result.measured_s;
  return out;
}

Json RobustJson(const sim::RobustJudgement& robust, bool optimised) {
  Json j = {{"variants", robust.values.size()},
            {"quantile", robust.quantile},
            {"value", robust.value},
            {"median", robust.median},
            {"worst", robust.worst},
            {"feasible", robust.feasible},
            {"optimised", optimised},
            {"values", robust.values}};
  if (!robust.feasible) j["reason"] = robust.reason;
  return j;
}

Json ResultsJson(const sim::Problem& problem, const std::vector<PlacerResult>& results, int best) {
  Json all = Json::array();
  const double bound = run::LowerBound(problem, results);
  for (const PlacerResult& r : results) all.push_back(ResultJson(problem, r, bound));
  const PlacerResult& chosen = results[static_cast<size_t>(best)];
  Json winner = ResultJson(problem, chosen, bound);
  Json placement = Json::object();
  for (sim::OpId op{0}; op < problem.num_ops(); ++op) {
    placement[problem.g().op(op).name] = problem.c().device(chosen.placement[op]).name;
  }
  winner["placement"] = std::move(placement);
  Json out = {{"format", "dplace-result/1"},   {"graph", problem.g().name()},
              {"cluster", problem.c().name()}, {"objective", sim::ObjectiveName(problem.objective)},
              {"results", std::move(all)},     {"best", std::move(winner)}};
  if (problem.objective == sim::Objective::kStep) {
    out["runtime"] = sim::IssueName(problem.step_model.issue);
  }
  return out;
}

}  // namespace dplace::report
