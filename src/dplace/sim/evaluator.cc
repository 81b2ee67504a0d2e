#include "dplace/sim/evaluator.h"

namespace dplace::sim {

Evaluation SimulatedEvaluator::Evaluate(const Placement& placement) {
  ++evaluations_;
  switch (problem_.objective) {
    case Objective::kThroughput:
      return max_load_.Evaluate(placement);
    case Objective::kLatency:
      return latency_.Evaluate(placement);
    case Objective::kStep:
      break;
  }
  return step_.Run(placement).evaluation;
}

}  // namespace dplace::sim
