#include <chrono>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>

#include "dplace/base/file_util.h"
#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/io/plan_export.h"
#include "dplace/place/deploy.h"
#include "dplace/place/search/score.h"
#include "dplace/registry/registry.h"
#include "dplace/report/table.h"
#include "dplace/sim/evaluator.h"

namespace dplace::cli {
namespace {

// Stages of the plan written, or, when it is not a pipeline of contiguous stages, of the best
// result that is (the `contiguous` placer's, run now if no result is), with a note on stderr: the
// search is not thrown away for want of a contiguous plan.
StatusOr<Json> StagesOfBestContiguous(const std::shared_ptr<const sim::Problem>& shared,
                                      const std::vector<run::PlacerResult>& results, int chosen,
                                      const run::RunRequest& request) {
  const sim::Problem& problem = *shared;
  auto stages = io::StagesJson(problem, results[static_cast<size_t>(chosen)].placement);
  if (stages.ok()) return stages;
  const run::PlacerResult* best = nullptr;
  Json best_stages;
  for (const run::PlacerResult& r : results) {
    auto s = io::StagesJson(problem, r.placement);
    if (s.ok() &&
        (best == nullptr || place::ScoreOf(r.evaluation) < place::ScoreOf(best->evaluation))) {
      best = &r;
      best_stages = std::move(*s);
    }
  }
  run::PlacerResult fallback;
  if (best == nullptr) {
    run::RunRequest contiguous = request;
    contiguous.placer = "contiguous";
    DPLACE_ASSIGN_OR_RETURN(fallback, run::Run(shared, contiguous));
    auto s = io::StagesJson(problem, fallback.placement);
    if (!s.ok()) return s.status().WithContext("--export stages");
    best_stages = std::move(*s);
    best = &fallback;
  }
  const std::string value = problem.objective == sim::Objective::kStep
                                ? FormatSeconds(best->evaluation.value)
                                : std::to_string(best->evaluation.value);
  const std::string note = "the written plan (" + results[static_cast<size_t>(chosen)].placer +
                           ") is not a pipeline of contiguous stages; the stages are " +
                           best->placer + "'s (" + value + ")";
  std::cerr << "note: --export stages: " << note << "\n";
  best_stages["note"] = note;
  best_stages["placer"] = best->placer;
  return best_stages;
}

// How the step's plans run, after "objective step": op-level plans for a graph executor, or
// device maps as eager PyTorch runs them.
std::string RuntimeLabel(const sim::Problem& problem) {
  if (problem.objective != sim::Objective::kStep) return "";
  return problem.step_model.issue == sim::Issue::kProgramOrder
             ? " (runtime eager: device maps as accelerate runs them)"
             : " (runtime executor: each device runs its ready ops, as dplace.torch.apply)";
}

}  // namespace

Status RunPlace(const PlaceFlags& flags) {
  // Loading and preparing the problem count against the time limits (run::RunAll).
  const auto began = std::chrono::steady_clock::now();
  if (flags.out_format != "plan" && flags.out_format != "paper-split") {
    return InvalidInput("--out-format: '" + flags.out_format + "' is not plan or paper-split");
  }
  if (!(flags.time_limit_s >= 0 && flags.time_limit_s <= kMaxSeconds)) {
    return InvalidInput("--time-limit: must be between 0 and 1e6 seconds");
  }
  if (flags.evaluations < 0) return InvalidInput("--evaluations: must not be negative");
  if (flags.coarsen_ops < 0) return InvalidInput("--coarsen: must not be negative");
  DPLACE_ASSIGN_OR_RETURN(const auto robust, RobustFromFlags(flags.robust));
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
  std::vector<Output> outputs = {{"--out", flags.out}, {"--trace", flags.trace}};
  if (flags.out_given && flags.out.empty()) return InvalidInput("--out: the file name is empty");
  for (const auto& [kind, file] : exports) outputs.push_back({"--export " + kind, file});
  DPLACE_RETURN_IF_ERROR(
      CheckOutputs(outputs, {flags.problem.graph.path, flags.problem.cluster, flags.plan}));
  // Each export chooses among plans judged as its file runs (run::SpecForExports).
  run::ProblemSpec spec = flags.problem;
  std::vector<std::string> export_kinds;
  for (const auto& [kind, file] : exports) export_kinds.push_back(kind);
  DPLACE_RETURN_IF_ERROR(WithFlagNames(run::SpecForExports(export_kinds, &spec)));
  DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, ProblemFromFlags(spec));
  const sim::Problem& problem = *lp.problem;
  sim::Placement plan;
  if (!flags.plan.empty()) {
    DPLACE_ASSIGN_OR_RETURN(plan, io::LoadPlan(flags.plan, problem.g(), problem.c()));
  }
  DPLACE_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          run::PlacerNames(flags.placers, problem.objective, "--placer"));
  DPLACE_ASSIGN_OR_RETURN(place::PlacerOptions placer_options,
                          place::ParseOptionSpecs(flags.options));
  if (!flags.portfolio.empty()) {
    DPLACE_ASSIGN_OR_RETURN(auto members,
                            run::PlacerNames(flags.portfolio, problem.objective, "--portfolio"));
    std::string list;
    for (const std::string& m : members) list += (list.empty() ? "" : ",") + m;
    placer_options["portfolio"]["members"] = list;
  }
  // Unknown keys and bad values fail before anything runs.
  for (const std::string& name : names) {
    DPLACE_RETURN_IF_ERROR(place::MakePlacer(name, placer_options).status().WithContext("--opt"));
  }

  const run::RunRequest request{
      .options = placer_options,
      .seed = flags.seed,
      .limits = {.evaluations = flags.evaluations, .seconds = flags.time_limit_s},
      .start = flags.plan.empty() ? nullptr : &plan,
      .coarsen_ops = flags.coarsen_ops,
      .robust = robust.first,
      .optimise_robust = robust.second};
  if (!(flags.total_time_limit_s >= 0 && flags.total_time_limit_s <= kMaxSeconds)) {
    return InvalidInput("--total-time-limit: must be between 0 and 1e6 seconds");
  }
  if (!(flags.tolerance >= 0 && flags.tolerance <= 1)) {
    return InvalidInput("--tolerance: must be between 0 and 1");
  }
  const double prepared_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  DPLACE_ASSIGN_OR_RETURN(
      std::vector<run::PlacerResult> results,
      run::RunAll(lp.problem, request, names, flags.total_time_limit_s, prepared_s));
  // Said (after the placers ran: an error stays one line) where it took more than half a limit.
  if ((flags.time_limit_s > 0 && prepared_s > 0.5 * flags.time_limit_s) ||
      (flags.total_time_limit_s > 0 && prepared_s > 0.5 * flags.total_time_limit_s)) {
    std::cerr << "note: loading and preparing the problem took " << FormatSeconds(prepared_s)
              << ", counted against the time limit\n";
  }
  std::vector<std::string> deploy_lines;
  const int best = run::DeployIndex(lp.problem, flags.tolerance, &results, &deploy_lines);
  const run::PlacerResult& winner = results[static_cast<size_t>(best)];
  // Every output is written to its temporary file first and renamed with the others at the end.
  OutputSet files;
  if (!flags.out.empty()) {
    DPLACE_RETURN_IF_ERROR(
        files.Add(flags.out, PlanFileContent(flags.out_format, problem, winner)));
  }
  if (!flags.trace.empty()) {
    DPLACE_RETURN_IF_ERROR(files.Add(flags.trace, TraceFileContent(problem, winner.placement)));
  }
  for (const auto& [kind, file] : exports) {
    Json j;
    if (kind == "device_map") {
      io::DeviceMap map = io::MakeDeviceMap(problem, winner.placement);
      for (const std::string& line : map.split_modules) std::cerr << "note: " << line << "\n";
      j = std::move(map.map);
    } else {
      DPLACE_ASSIGN_OR_RETURN(j, StagesOfBestContiguous(lp.problem, results, best, request));
    }
    DPLACE_RETURN_IF_ERROR(files.Add(file, j.dump(2) + "\n"));
  }
  DPLACE_RETURN_IF_ERROR(files.Commit());

  if (flags.json) {
    PrintJson(report::ResultsJson(problem, results, best));
    return OkStatus();
  }
  std::cout << "graph " << problem.g().name() << " (" << problem.num_ops() << " ops) on "
            << problem.c().name() << " (" << problem.num_devices() << " devices), objective "
            << sim::ObjectiveName(problem.objective) << RuntimeLabel(problem) << "\n\n"
            << report::ComparisonTable(problem, results, best) << "\nbest: " << winner.placer
            << "\n"
            << report::DeviceTable(problem, winner.evaluation);
  for (const std::string& line : deploy_lines) std::cout << line << "\n";
  if (problem.objective == sim::Objective::kStep) {
    for (const std::string& line :
         FitLines(problem, lp.loaded.batch, &winner.placement, winner.evaluation.value)) {
      std::cout << line << "\n";
    }
  }
  if (!flags.out.empty()) std::cout << "plan written to " << flags.out << "\n";
  if (!flags.trace.empty()) std::cout << "trace written to " << flags.trace << "\n";
  for (const auto& [kind, file] : exports) std::cout << kind << " written to " << file << "\n";
  return OkStatus();
}

}  // namespace dplace::cli
