#include "dplace/run/run.h"

#include <algorithm>

#include "dplace/base/units.h"
#include "dplace/place/coarsen.h"
#include "dplace/run/chunks.h"
#include "dplace/sim/variants.h"

namespace dplace::run {

place::Member ValidRequest::Take(size_t i) {
  if (made_[i].placer != nullptr) return std::move(made_[i]);
  // Made once already with these options: it cannot fail now.
  return std::move(place::MakePlacer(names_[i], request_.options)).value();
}

Status CheckLimits(const RunRequest& request, double total_time_limit_s) {
  if (!(request.limits.seconds >= 0 && request.limits.seconds <= kMaxSeconds)) {
    return InvalidInput("time_limit: must be between 0 and 1e6 seconds");
  }
  if (!(total_time_limit_s >= 0 && total_time_limit_s <= kMaxSeconds)) {
    return InvalidInput("total_time_limit: must be between 0 and 1e6 seconds");
  }
  if (request.limits.evaluations < 0) return InvalidInput("evaluations: must not be negative");
  if (request.coarsen_ops < 0) return InvalidInput("coarsen: must not be negative");
  if (request.robust.count > 0 || request.optimise_robust) {
    DPLACE_RETURN_IF_ERROR(sim::CheckRobustOptions(request.robust));
  }
  if (request.measure != nullptr && request.optimise_robust) {
    return InvalidInput("measure: a measured search cannot also search by the robust objective");
  }
  return OkStatus();
}

StatusOr<ValidRequest> Validate(RunRequest request, std::vector<std::string> placers,
                                double total_time_limit_s) {
  DPLACE_RETURN_IF_ERROR(CheckLimits(request, total_time_limit_s));
  if (placers.empty()) return InvalidInput("placer: no placer named");
  ValidRequest valid;
  for (const std::string& name : placers) {
    auto member = place::MakePlacer(name, request.options);
    if (!member.ok()) {
      // An unknown placer is the placer's error; a bad option, the option's.
      return member.status().WithContext(place::FindPlacer(name).ok() ? "options" : "placer");
    }
    valid.made_.push_back(std::move(member).value());
  }
  valid.request_ = std::move(request);
  valid.total_time_limit_s_ = total_time_limit_s;
  valid.names_ = std::move(placers);
  return valid;
}

StatusOr<PlacerResult> Run(const std::shared_ptr<const sim::Problem>& shared,
                           const RunRequest& request) {
  DPLACE_ASSIGN_OR_RETURN(ValidRequest valid, Validate(request, {request.placer}));
  return Run(shared, valid.request(), valid.Take(0));
}

namespace {

// Places `shared` with `member` and judges the result; with `real`, `shared` is `real` chunked
// (chunks.h): the placer searches by `real`'s evaluator on its plans mapped back, and the result
// is the plan mapped back, judged on `real`, with no bound proved (a placer's proof is of the
// chunks' problem).
StatusOr<PlacerResult> RunOn(const std::shared_ptr<const sim::Problem>& shared,
                             const RunRequest& request, place::Member member,
                             const std::shared_ptr<const sim::Problem>& real = nullptr) {
  std::unique_ptr<sim::Evaluator> evaluator =
      real == nullptr ? sim::MakeEvaluator(shared)
                      : std::make_unique<ChunkedEvaluator>(shared, sim::MakeEvaluator(real));
  if (real != nullptr &&
      (request.robust.count > 0 || request.optimise_robust || request.measure != nullptr)) {
    return InvalidInput(
        "schedule: interleaved plans are judged by the simulation only (not robust or "
        "measured)");
  }
  std::unique_ptr<sim::RobustEvaluator> robust;
  // What the placer places: the problem, or, searching by the robust value, a copy whose lower
  // bound is the robust one (a search stops at its problem's bound).
  std::shared_ptr<const sim::Problem> placed_problem = shared;
  if (request.robust.count > 0 || request.optimise_robust) {
    DPLACE_ASSIGN_OR_RETURN(robust, sim::MakeRobustEvaluator(shared, request.robust));
    if (request.optimise_robust) {
      placed_problem = sim::Changed(
          *shared, [&robust](sim::Problem& p) { p.lower_bound = robust->lower_bound(); });
      evaluator = robust->Fork();
    }
  }
  if (request.measure != nullptr) {
    // The simulation's bound does not hold for measured steps (a search would stop at it).
    placed_problem = sim::Changed(*shared, [](sim::Problem& p) { p.lower_bound = 0; });
    evaluator = std::make_unique<sim::MeasuredEvaluator>(shared, request.measure);
  }
  const sim::Problem& problem = *placed_problem;
  const place::PlaceRequest place_request{.evaluator = evaluator.get(),
                                          .seed = request.seed,
                                          .limits = request.limits,
                                          .start = request.start};
  // The exact placers prove optimality and bounds: only on the graph itself.
  auto placed =
      request.coarsen_ops > 0 && member.traits.family != place::Family::kExact
          ? place::PlaceCoarsened(*member.placer, problem, place_request,
                                  {.target_ops = request.coarsen_ops, .refine = request.refine})
          : member.placer->Place(problem, place_request);
  if (!placed.ok()) return placed.status().WithContext("placer " + member.name);
  // A device map's plan is where its ops run once dispatched (the placement its figures are of).
  const sim::Placement plan = real == nullptr ? sim::Dispatched(*shared, placed->placement)
                                              : FromChunks(*real, placed->placement);
  PlacerResult result{.placer = member.name,
                      .placement = plan,
                      .evaluation = sim::MakeEvaluator(real == nullptr ? shared : real)
                                        ->Evaluate(real == nullptr ? placed->placement : plan),
                      .proven_bound = real == nullptr ? placed->proven_bound : 0,
                      .search_time_s = placed->stats.seconds,
                      .note = real == nullptr || placed->note.empty()
                                  ? std::move(placed->note)
                                  : placed->note + " for its chunks",
                      .evaluations = placed->stats.evaluations};
  if (robust != nullptr) {
    result.robust = robust->Judge(result.placement);
    result.robust_optimised = request.optimise_robust;
  }
  if (request.measure != nullptr) {
    DPLACE_RETURN_IF_ERROR(request.measure->first_error());
    if (result.evaluation.feasible) {
      DPLACE_ASSIGN_OR_RETURN(result.measured_s, (*request.measure)(result.placement));
    }
  }
  for (const auto& [placer, values] : request.options) {
    for (const auto& [key, value] : values) {
      result.options.push_back(placer + "." + key + "=" + value);
    }
  }
  return result;
}

}  // namespace

StatusOr<PlacerResult> Run(const std::shared_ptr<const sim::Problem>& shared,
                           const RunRequest& request, place::Member member) {
  const bool interleaved = sim::RowOf(shared->schedule).interleaves;
  // Under auto, the pipeline objective also weighs interleaving: the placer plans both, each in
  // half the request's limits, and the faster plan that fits is kept (the plain one on ties).
  // Not where the request judges by robust or measured values, which interleaved plans lack.
  const bool simulated_only =
      request.robust.count == 0 && !request.optimise_robust && request.measure == nullptr;
  const bool weigh = shared->schedule_auto && shared->objective == sim::Objective::kPipeline &&
                     shared->c().num_devices() > 1 && shared->virtual_stages > 1 &&
                     shared->microbatches % shared->c().num_devices() == 0 && simulated_only;
  if (!(interleaved && shared->virtual_stages > 1) && !weigh) {
    return RunOn(shared, request, std::move(member));
  }
  DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<const sim::Problem> chunked,
                          ChunkedProblem(*shared, shared->virtual_stages));
  if (!weigh) return RunOn(chunked, request, std::move(member), shared);
  RunRequest half = request;
  half.limits.seconds /= 2;
  if (half.limits.evaluations > 0) half.limits.evaluations = (half.limits.evaluations + 1) / 2;
  DPLACE_ASSIGN_OR_RETURN(PlacerResult plain, RunOn(shared, half, std::move(member)));
  DPLACE_ASSIGN_OR_RETURN(place::Member again, place::MakePlacer(plain.placer, request.options));
  DPLACE_ASSIGN_OR_RETURN(PlacerResult chunks, RunOn(chunked, half, std::move(again), shared));
  const auto key = [](const PlacerResult& r) {
    return std::make_pair(!r.evaluation.feasible, r.evaluation.value);
  };
  PlacerResult& kept = key(chunks) < key(plain) ? chunks : plain;
  kept.search_time_s = plain.search_time_s + chunks.search_time_s;
  kept.evaluations = plain.evaluations + chunks.evaluations;
  return std::move(kept);
}

double LowerBound(const sim::Problem& problem, const std::vector<PlacerResult>& results) {
  double bound = problem.LowerBound();
  for (const PlacerResult& r : results) bound = std::max(bound, r.proven_bound);
  return bound;
}

}  // namespace dplace::run
