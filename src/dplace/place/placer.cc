#include "dplace/place/placer.h"

#include <chrono>
#include <string>

#include "dplace/sim/constraints.h"

namespace dplace::place {

const sim::Placement* StartOf(const sim::Problem& problem, const PlaceRequest& request) {
  const sim::Placement* start = request.start;
  return start != nullptr && start->size() == problem.g().ops().size() ? start : nullptr;
}

StatusOr<PlaceResult> Placer::Place(const sim::Problem& problem, const PlaceRequest& request) {
  if (request.evaluator == nullptr) return Internal("PlaceRequest has no evaluator");
  const auto began = std::chrono::steady_clock::now();
  const int64_t evaluations = request.evaluator->evaluations();
  PlaceResult result;
  if (!problem.infeasible_reason.empty()) {  // nothing to search: say why, place on device 0
    result.placement.assign(problem.g().ops().size(), sim::DeviceId(0));
    result.note = "not searched: no placement of this instance can be feasible";
  } else {
    DPLACE_ASSIGN_OR_RETURN(result, PlaceImpl(problem, request));
    Status shape = sim::CheckShape(problem, result.placement);
    if (!shape.ok()) {
      return Internal("placer '" + std::string(name()) +
                      "' returned a malformed placement: " + shape.message());
    }
  }
  result.stats = {
      .evaluations = request.evaluator->evaluations() - evaluations,
      .seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count()};
  return result;
}

}  // namespace dplace::place
