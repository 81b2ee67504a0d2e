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

// `all` means every placer that supports the objective; `portfolio` is left out (a meta placer:
// it would run them all again).
StatusOr<std::vector<std::string>> PlacerNames(const std::string& spec, sim::Objective objective,
                                               const std::string& flag = "--placer") {
  std::vector<std::string> names;
  if (spec == "all") {
    for (const place::PlacerEntry& e : place::Placers()) {
      if (e.traits.family == place::Family::kMeta || !e.traits.Supports(objective)) continue;
      names.emplace_back(e.name);
    }
    return names;
  }
  std::stringstream ss(spec);
  std::string name;
  while (std::getline(ss, name, ',')) {
    if (name.empty()) continue;
    DPLACE_RETURN_IF_ERROR(place::FindPlacer(name).status().WithContext(flag));
    names.push_back(name);
  }
  if (names.empty()) return InvalidInput(flag + ": no placer named");
  return names;
}

// How results rank: by the robust value where the searches minimised it (feasible on the problem
// and on every variant first), else by the problem's own value.
place::Score RankScore(const run::PlacerResult& r) {
  if (!r.robust_optimised || !r.robust) return place::ScoreOf(r.evaluation);
  return {r.evaluation.feasible && r.robust->feasible, r.robust->value};
}

// Best result: feasible first, then the smaller value; ties keep the earlier placer.
int BestIndex(const std::vector<run::PlacerResult>& results) {
  int best = 0;
  for (int i = 1; i < static_cast<int>(results.size()); ++i) {
    if (RankScore(results[static_cast<size_t>(i)]) <
        RankScore(results[static_cast<size_t>(best)])) {
      best = i;
    }
  }
  return best;
}

// The plan to deploy (place/deploy.h): among the feasible results within `tolerance` of the best,
// the one on the fewest devices, then with the fewest bytes crossing, then the smallest value.
// Each candidate is first tidied (ops without work follow their neighbours) where the tidied plan
// is still within the tolerance. Where one device of some kind is within it, `lines` says so (the
// `single` placer, when it ran, is then a candidate on one device).
// `lines` gets what the user should read about the choice. Where the searches minimised the robust
// value, the best by it is the plan (the tolerance weighs the problem's own value only).
int DeployIndex(const std::shared_ptr<const sim::Problem>& shared, double tolerance,
                std::vector<run::PlacerResult>* results, std::vector<std::string>* lines) {
  const int best = BestIndex(*results);
  const sim::Evaluation& top = (*results)[static_cast<size_t>(best)].evaluation;
  if (!top.feasible || (*results)[static_cast<size_t>(best)].robust_optimised) return best;
  const double limit = top.value * (1 + tolerance);
  const sim::Problem& problem = *shared;
  const std::unique_ptr<sim::Evaluator> evaluator = sim::MakeEvaluator(shared);
  auto percent = [&](double value) {
    return dplace::FormatPercent(top.value > 0 ? value / top.value - 1 : 0);
  };
  // One device of each kind, where every op may run there.
  std::set<std::string> kinds_seen;
  for (sim::DeviceId d{0}; d < problem.num_devices(); ++d) {
    const std::string& kind = problem.c().device(d).kind;
    if (!kinds_seen.insert(kind).second) continue;
    sim::Placement one(problem.g().ops().size(), d);
    sim::Evaluation e = evaluator->Evaluate(one);
    if (!e.feasible || e.value > limit) continue;
    if (place::DevicesUsed(problem, (*results)[static_cast<size_t>(best)].placement) <= 1) break;
    lines->push_back("one device is within " + percent(e.value) + " of the best: use one " + kind);
    break;
  }
  int chosen = best;
  auto rank = [&](const run::PlacerResult& r) {
    return std::make_tuple(place::DevicesUsed(problem, r.placement),
                           place::BytesCrossing(problem, r.placement), r.evaluation.value);
  };
  for (size_t i = 0; i < results->size(); ++i) {
    run::PlacerResult& r = (*results)[i];
    if (!r.evaluation.feasible || r.evaluation.value > limit) continue;
    sim::Placement tidy = place::FollowNeighbours(problem, r.placement);
    if (tidy != r.placement) {
      sim::Evaluation e = evaluator->Evaluate(tidy);
      if (e.feasible && e.value <= limit && rank({.placement = tidy, .evaluation = e}) < rank(r)) {
        e.lower_bound = r.evaluation.lower_bound;
        r.placement = std::move(tidy);
        r.evaluation = std::move(e);
        r.note +=
            std::string(r.note.empty() ? "" : "; ") + "ops without work follow their neighbours";
      }
    }
    if (rank(r) < rank((*results)[static_cast<size_t>(chosen)])) chosen = static_cast<int>(i);
  }
  if (chosen != best) {
    const run::PlacerResult& c = (*results)[static_cast<size_t>(chosen)];
    lines->push_back("written: " + c.placer + ", on " +
                     std::to_string(place::DevicesUsed(problem, c.placement)) + " devices, " +
                     percent(c.evaluation.value) + " from the best (--tolerance " +
                     dplace::FormatPercent(tolerance) + ")");
  }
  return chosen;
}

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

}  // namespace

Status RunPlace(const PlaceFlags& flags) {
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
  std::vector<std::pair<std::string, std::string>> outputs = {{"--out", flags.out},
                                                              {"--trace", flags.trace}};
  if (flags.out_given && flags.out.empty()) return InvalidInput("--out: the file name is empty");
  for (const auto& [kind, file] : exports) outputs.emplace_back("--export " + kind, file);
  DPLACE_RETURN_IF_ERROR(CheckOutputs(outputs));
  DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, ProblemFromFlags(flags.problem));
  const sim::Problem& problem = *lp.problem;
  sim::Placement plan;
  if (!flags.plan.empty()) {
    DPLACE_ASSIGN_OR_RETURN(plan, io::LoadPlan(flags.plan, problem.g(), problem.c()));
  }
  DPLACE_ASSIGN_OR_RETURN(std::vector<std::string> names,
                          PlacerNames(flags.placers, problem.objective));
  DPLACE_ASSIGN_OR_RETURN(place::PlacerOptions placer_options,
                          place::ParseOptionSpecs(flags.options));
  if (!flags.portfolio.empty()) {
    DPLACE_ASSIGN_OR_RETURN(auto members,
                            PlacerNames(flags.portfolio, problem.objective, "--portfolio"));
    std::string list;
    for (const std::string& m : members) list += (list.empty() ? "" : ",") + m;
    placer_options["portfolio"]["members"] = list;
  }
  // Unknown keys and bad values fail before anything runs.
  for (const std::string& name : names) {
    DPLACE_RETURN_IF_ERROR(place::MakePlacer(name, placer_options).status().WithContext("--opt"));
  }

  std::vector<run::PlacerResult> results;
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
  const auto started = std::chrono::steady_clock::now();
  for (size_t i = 0; i < names.size(); ++i) {
    run::RunRequest share = request;
    share.placer = names[i];
    if (flags.total_time_limit_s > 0) {
      const double spent =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const double fair = std::max(
          0.05, (flags.total_time_limit_s - spent) / static_cast<double>(names.size() - i));
      share.limits.seconds =
          request.limits.seconds > 0 ? std::min(request.limits.seconds, fair) : fair;
    }
    DPLACE_ASSIGN_OR_RETURN(run::PlacerResult r, run::Run(lp.problem, share));
    results.push_back(std::move(r));
  }
  run::ShareBestLowerBound(&results);
  if (!(flags.tolerance >= 0 && flags.tolerance <= 1)) {
    return InvalidInput("--tolerance: must be between 0 and 1");
  }
  std::vector<std::string> deploy_lines;
  const int best = DeployIndex(lp.problem, flags.tolerance, &results, &deploy_lines);
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
            << sim::ObjectiveName(problem.objective) << "\n\n"
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
