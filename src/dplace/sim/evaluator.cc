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

void SimulatedEvaluator::SetBase(const Placement& base) {
  if (problem_.objective == Objective::kStep) step_.SetBase(base);
}

Evaluation SimulatedEvaluator::EvaluateNear(const Placement& placement) {
  if (problem_.objective != Objective::kStep) return Evaluate(placement);
  ++evaluations_;
  return step_.RunNear(placement).evaluation;
}

Evaluation SimulatedEvaluator::EvaluateNear(const Placement& placement, double give_up_above) {
  if (problem_.objective != Objective::kStep) return Evaluate(placement);
  ++evaluations_;
  return step_.RunNear(placement, give_up_above).evaluation;
}

std::vector<OpId> SimulatedEvaluator::CriticalPath(const Placement& placement) {
  if (problem_.objective != Objective::kStep) return {};
  ++evaluations_;
  return step_.CriticalPath(placement);
}

}  // namespace dplace::sim
