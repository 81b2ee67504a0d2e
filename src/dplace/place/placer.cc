#include "dplace/place/placer.h"

#include <string>

#include "dplace/sim/constraints.h"

namespace dplace::place {

StatusOr<sim::Placement> Placer::Place(const sim::Problem& problem, PlaceContext& context) {
  if (context.evaluator == nullptr) return Internal("PlaceContext has no evaluator");
  if (!problem.infeasible_reason.empty()) {  // nothing to search: say why, place on device 0
    context.note = "not searched: no placement of this instance can be feasible";
    return sim::Placement(static_cast<size_t>(problem.num_ops()), 0);
  }
  auto placement = PlaceImpl(problem, context);
  if (!placement.ok()) return placement;
  Status shape = sim::CheckShape(problem, *placement);
  if (!shape.ok()) {
    return Internal("placer '" + std::string(name()) +
                    "' returned a malformed placement: " + shape.message());
  }
  return placement;
}

}  // namespace dplace::place
