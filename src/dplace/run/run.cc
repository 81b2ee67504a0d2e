#include "dplace/run/run.h"

#include <algorithm>

#include "dplace/place/coarsen.h"

namespace dplace::run {

StatusOr<PlacerResult> Run(const std::shared_ptr<const sim::Problem>& shared,
                           const RunRequest& request) {
  DPLACE_ASSIGN_OR_RETURN(place::Member member, place::MakePlacer(request.placer, request.options));
  std::unique_ptr<sim::Evaluator> evaluator = sim::MakeEvaluator(shared);
  std::unique_ptr<sim::RobustEvaluator> robust;
  // What the placer places: the problem, or, searching by the robust value, a copy whose lower
  // bound is the robust one (a search stops at its problem's bound).
  std::shared_ptr<const sim::Problem> placed_problem = shared;
  if (request.robust.count > 0 || request.optimise_robust) {
    DPLACE_ASSIGN_OR_RETURN(robust, sim::MakeRobustEvaluator(shared, request.robust));
    if (request.optimise_robust) {
      auto copy = std::make_shared<sim::Problem>(*shared);
      copy->lower_bound = robust->lower_bound();
      placed_problem = std::move(copy);
      evaluator = robust->Fork();
    }
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
  if (!placed.ok()) return placed.status().WithContext("placer " + request.placer);
  sim::Evaluation e = sim::MakeEvaluator(shared)->Evaluate(placed->placement);
  e.lower_bound = std::max(e.lower_bound, placed->proven_bound);
  // A device map's plan is where its ops run once dispatched (the placement its figures are of).
  PlacerResult result{.placer = request.placer,
                      .placement = sim::Dispatched(*shared, placed->placement),
                      .evaluation = std::move(e),
                      .search_time_s = placed->stats.seconds,
                      .note = std::move(placed->note),
                      .evaluations = placed->stats.evaluations};
  if (robust != nullptr) {
    result.robust = robust->Judge(result.placement);
    result.robust_optimised = request.optimise_robust;
  }
  for (const auto& [placer, values] : request.options) {
    for (const auto& [key, value] : values) {
      result.options.push_back(placer + "." + key + "=" + value);
    }
  }
  return result;
}

void ShareBestLowerBound(std::vector<PlacerResult>* results) {
  double best = 0;
  for (const auto& r : *results) best = std::max(best, r.evaluation.lower_bound);
  for (auto& r : *results) r.evaluation.lower_bound = best;
}

}  // namespace dplace::run
