#include <chrono>
#include <iostream>
#include <set>
#include <sstream>
#include <tuple>

#include "dplace/base/file_util.h"
#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/place/deploy.h"
#include "dplace/place/search/score.h"
#include "dplace/registry/registry.h"
#include "dplace/report/table.h"
#include "dplace/run/exports.h"
#include "dplace/sim/evaluator.h"

namespace dplace::cli {
namespace {

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
  DPLACE_ASSIGN_OR_RETURN(const auto robust, RobustFromFlags(flags.robust));
  std::vector<std::pair<const run::ExportRow*, std::string>> exports;  // (format, file)
  std::vector<std::string> export_names;
  for (const std::string& spec : flags.exports) {
    const size_t eq = spec.find('=');
    auto row = run::FindExport(spec.substr(0, eq));
    if (eq == std::string::npos || eq + 1 == spec.size() || !row.ok()) {
      std::string formats;
      for (const run::ExportRow& r : run::ExportTable()) {
        formats += std::string(formats.empty() ? "" : " or ") + std::string(r.name) + "=FILE";
      }
      return InvalidInput("--export: '" + spec + "' is not " + formats);
    }
    exports.emplace_back(*row, spec.substr(eq + 1));
    export_names.emplace_back((*row)->name);
  }
  std::vector<Output> outputs = {{"--out", flags.out}, {"--trace", flags.trace}};
  if (flags.out_given && flags.out.empty()) return InvalidInput("--out: the file name is empty");
  for (const auto& [row, file] : exports) {
    outputs.push_back({"--export " + std::string(row->name), file});
  }
  DPLACE_RETURN_IF_ERROR(
      CheckOutputs(outputs, {flags.problem.graph.path, flags.problem.cluster, flags.plan}));
  run::RunRequest request{
      .seed = flags.seed,
      .limits = {.evaluations = flags.evaluations, .seconds = flags.time_limit_s},
      .coarsen_ops = flags.coarsen_ops,
      .robust = robust.first,
      .optimise_robust = robust.second};
  // Bad numbers are refused before a large graph loads (Validate checks them again, with the
  // placers).
  DPLACE_RETURN_IF_ERROR(WithFlagNames(run::CheckLimits(request, flags.total_time_limit_s)));
  if (!(flags.tolerance >= 0 && flags.tolerance <= 1)) {
    return InvalidInput("--tolerance: must be between 0 and 1");
  }
  // Each export chooses among plans judged as its file runs (run::SpecForExports).
  run::ProblemSpec spec = flags.problem;
  if (flags.time_limit_s > 0) spec.replicas_seconds = flags.time_limit_s;
  DPLACE_RETURN_IF_ERROR(WithFlagNames(run::SpecForExports(export_names, &spec)));
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
  // Everything is checked, and the placers made, before anything runs.
  request.options = std::move(placer_options);
  request.start = flags.plan.empty() ? nullptr : &plan;
  DPLACE_ASSIGN_OR_RETURN(run::ValidRequest valid,
                          ValidateFromFlags(std::move(request), names, flags.total_time_limit_s));
  request = valid.request();  // as validated, for the exports' fallback runs
  const double prepared_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  DPLACE_ASSIGN_OR_RETURN(std::vector<run::PlacerResult> results,
                          run::RunAll(lp.problem, std::move(valid), prepared_s));
  // Said (after the placers ran: an error stays one line) where it took more than half a limit.
  if ((flags.time_limit_s > 0 && prepared_s > 0.5 * flags.time_limit_s) ||
      (flags.total_time_limit_s > 0 && prepared_s > 0.5 * flags.total_time_limit_s)) {
    std::cerr << "note: loading and preparing the problem took " << FormatSeconds(prepared_s)
              << ", counted against the time limit\n";
  }
  std::vector<std::string> deploy_lines;
  const int best = run::DeployIndex(lp.problem, flags.tolerance, &results, &deploy_lines);
  const run::PlacerResult& winner = results[static_cast<size_t>(best)];
  const double bound = run::LowerBound(problem, results);
  // Every output is written to its temporary file first and renamed with the others at the end.
  OutputSet files;
  if (!flags.out.empty()) {
    DPLACE_RETURN_IF_ERROR(
        files.Add(flags.out, PlanFileContent(flags.out_format, problem, winner, bound)));
  }
  if (!flags.trace.empty()) {
    DPLACE_RETURN_IF_ERROR(files.Add(flags.trace, TraceFileContent(problem, winner.placement)));
  }
  for (const auto& [row, file] : exports) {
    DPLACE_ASSIGN_OR_RETURN(run::ExportFile f,
                            run::ExportOfResults(*row, lp.problem, results, best, request));
    for (const std::string& line : f.notes) std::cerr << "note: " << line << "\n";
    DPLACE_RETURN_IF_ERROR(files.Add(file, f.content.dump(2) + "\n"));
  }
  DPLACE_RETURN_IF_ERROR(files.Commit());

  if (flags.json) {
    if (!lp.replicas_note.empty()) std::cerr << "note: " << lp.replicas_note << "\n";
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
  if (!lp.replicas_note.empty()) std::cout << lp.replicas_note << "\n";
  if (problem.objective == sim::Objective::kStep) {
    for (const std::string& line :
         FitLines(problem, lp.loaded.batch, &winner.placement, winner.evaluation.value)) {
      std::cout << line << "\n";
    }
  }
  if (!flags.out.empty()) std::cout << "plan written to " << flags.out << "\n";
  if (!flags.trace.empty()) std::cout << "trace written to " << flags.trace << "\n";
  for (const auto& [row, file] : exports) std::cout << row->name << " written to " << file << "\n";
  return OkStatus();
}

}  // namespace dplace::cli
