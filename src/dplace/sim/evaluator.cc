#include "dplace/sim/evaluator.h"

namespace dplace::sim {

Evaluation SimulatedEvaluator::Evaluate(const Placement& placement) {
  ++evaluations_;
  if (problem_.objective == Objective::kThroughput) return max_load_.Evaluate(placement);
  return step_.Run(placement).evaluation;
}

}  // namespace dplace::sim
