#include <iostream>
#include <sstream>

#include "dplace/base/file_util.h"
#include "dplace/cli/commands.h"
#include "dplace/io/plan_export.h"
#include "dplace/place/registry.h"
#include "dplace/place/search/score.h"
#include "dplace/report/table.h"

namespace dplace::cli {
namespace {

// `all` means every placer that can run here: on the paper's objectives (throughput, latency) for
// the placers of the paper's model; `portfolio` is left out (it would run them all again).
StatusOr<std::vector<std::string>> PlacerNames(const std::string& spec, bool have_plan,
                                               sim::Objective objective,
                                               const std::string& flag = "--placer") {
  std::vector<std::string> names;
  if (spec == "all") {
    for (const place::PlacerEntry& e : place::Placers()) {
      if ((e.needs_plan && !have_plan) || e.name == "portfolio") continue;
      if (e.paper_model_only && objective == sim::Objective::kStep) continue;
      names.emplace_back(e.name);
    }
    return names;
  }
  std::stringstream ss(spec);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    DPLACE_RETURN_IF_ERROR(place::MakePlacer(name).status().WithContext(flag));
    names.push_back(name);
  }
  if (names.empty()) return InvalidInput(flag + ": no placer named");
  return names;
}

// Best result: feasible first, then the smaller value; ties keep the earlier placer.
int BestIndex(const std::vector<report::PlacerResult>& results) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(results.size()); ++i) {
    if (place::ScoreOf(results[static_cast<size_t>(i)].evaluation) <
        place::ScoreOf(results[static_cast<size_t>(best)].evaluation)) {
      best = i;
    }
  }
  return best;
}

}  // namespace

Status RunPlace(const PlaceFlags& flags) {
  if (flags.out_format != "plan" && flags.out_format != "paper-split") {
    return InvalidInput("--out-format: '" + flags.out_format + "' is not plan or paper-split");
  }
  if (flags.time_limit_s < 0) return InvalidInput("--time-limit: must not be negative");
  if (flags.evaluations < 0) return InvalidInput("--evaluations: must not be negative");
  if (flags.coarsen_ops < 0) return InvalidInput("--coarsen: must not be negative");
  std::vector<std::pair<std::string, std::string>> exports;  // (kind, file)
  for (const std::string& spec : flags.exports) {
    const size_t eq = spec.find('=');
    const std::string kind = spec.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == spec.size() ||
        (kind != "device_map" && kind != "stages")) {
      return InvalidInput("--export: '" + spec + "' is not device_map=FILE or stages=FILE");
    }
    exports.emplace_back(kind, spec.substr(eq + 1));
  }
  DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, LoadProblem(flags.problem));
  const sim::Problem& problem = *lp.problem;
  sim::Placement plan;
  if (!flags.plan.empty()) {
    DPLACE_ASSIGN_OR_RETURN(plan, io::LoadPlan(flags.plan, problem.g(), problem.c()));
  }
  DPLACE_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          PlacerNames(flags.placers, !flags.plan.empty(), problem.objective));
  std::vector<std::string> portfolio;
  if (!flags.portfolio.empty()) {
    DPLACE_ASSIGN_OR_RETURN(portfolio,
                            PlacerNames(flags.portfolio, true, problem.objective, "--portfolio"));
  }

  std::vector<report::PlacerResult> results;
  const RunOptions options{.seed = flags.seed,
                           .time_limit_s = flags.time_limit_s,
                           .evaluations = flags.evaluations,
                           .given_plan = flags.plan.empty() ? nullptr : &plan,
                           .portfolio = portfolio,
                           .coarsen_ops = flags.coarsen_ops};
  for (const std::string& name : names) {
    DPLACE_ASSIGN_OR_RETURN(report::PlacerResult r, RunPlacer(name, problem, options));
    results.push_back(std::move(r));
  }
  ShareBestLowerBound(&results);
  const int best = BestIndex(results);
  const report::PlacerResult& winner = results[static_cast<size_t>(best)];
  if (!flags.out.empty()) {
    DPLACE_RETURN_IF_ERROR(WritePlanFile(flags.out, flags.out_format, problem, winner));
  }
  if (!flags.trace.empty()) {
    DPLACE_RETURN_IF_ERROR(WriteTraceFile(flags.trace, problem, winner.placement));
  }
  for (const auto& [kind, file] : exports) {
    Json j;
    if (kind == "device_map") {
      io::DeviceMap map = io::MakeDeviceMap(problem, winner.placement);
      for (const std::string& line : map.split_modules) std::cerr << "note: " << line << "\n";
      j = std::move(map.map);
    } else {
      DPLACE_ASSIGN_OR_RETURN(j, io::StagesJson(problem, winner.placement));
    }
    DPLACE_RETURN_IF_ERROR(WriteFileAtomically(file, j.dump(2) + "\n"));
  }

  if (flags.json) {
    if (results.size() == 1) {
      PrintJson(report::ResultJson(problem, winner));
    } else {
      Json all = Json::array();
      for (const auto& r : results) all.push_back(report::ResultJson(problem, r));
      PrintJson({{"results", all}, {"best", report::ResultJson(problem, winner)}});
    }
    return OkStatus();
  }
  std::cout << "graph " << problem.g().name() << " (" << problem.num_ops() << " ops) on "
            << problem.c().name() << " (" << problem.num_devices() << " devices), objective "
            << sim::ObjectiveName(problem.objective) << "\n\n"
            << report::ComparisonTable(problem, results, best) << "\nbest: " << winner.placer
            << "\n"
            << report::DeviceTable(problem, winner.evaluation);
  if (!flags.out.empty()) std::cout << "plan written to " << flags.out << "\n";
  if (!flags.trace.empty()) std::cout << "trace written to " << flags.trace << "\n";
  for (const auto& [kind, file] : exports) std::cout << kind << " written to " << file << "\n";
  return OkStatus();
}

}  // namespace dplace::cli
