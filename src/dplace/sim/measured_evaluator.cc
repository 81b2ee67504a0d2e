#include "dplace/sim/measured_evaluator.h"

#include <cmath>
#include <sstream>
#include <string>
#include <utility>

namespace dplace::sim {

StatusOr<double> Measurer::operator()(const Placement& placement) const {
  const std::lock_guard<std::mutex> lock(mutex_);
  StatusOr<double> seconds = measure_(placement);
  if (seconds.ok() && !(std::isfinite(*seconds) && *seconds > 0)) {
    std::ostringstream text;
    text << "measure: returned " << *seconds << ", not a positive number of seconds";
    seconds = InvalidInput(text.str());
  }
  if (!seconds.ok() && first_error_.ok()) first_error_ = seconds.status();
  return seconds;
}

Status Measurer::first_error() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return first_error_;
}

MeasuredEvaluator::MeasuredEvaluator(std::shared_ptr<const Problem> problem,
                                     std::shared_ptr<const Measurer> measurer)
    : Evaluator(problem),
      measurer_(std::move(measurer)),
      simulated_(MakeEvaluator(std::move(problem))) {}

std::unique_ptr<Evaluator> MeasuredEvaluator::Fork() const {
  return std::make_unique<MeasuredEvaluator>(shared_problem(), measurer_);
}

IncrementalEvaluator* MeasuredEvaluator::Incremental() {
  return simulated_->Incremental() != nullptr ? this : nullptr;
}

void MeasuredEvaluator::SetBase(const Placement& /*base*/) {}

Evaluation MeasuredEvaluator::EvaluateNear(const Placement& placement, double /*give_up_above*/) {
  Count();
  return EvaluateImpl(placement);
}

std::vector<OpId> MeasuredEvaluator::CriticalPath(const Placement& placement) {
  Count();
  return simulated_->Incremental()->CriticalPath(placement);
}

Evaluation MeasuredEvaluator::EvaluateImpl(const Placement& placement) {
  return Measured(simulated_->Evaluate(placement), placement);
}

Evaluation MeasuredEvaluator::EvaluateTimedImpl(const Placement& placement, Timing* timing) {
  return Measured(simulated_->EvaluateTimed(placement, timing), placement);
}

Evaluation MeasuredEvaluator::Measured(Evaluation simulated, const Placement& placement) const {
  if (!simulated.feasible) return simulated;  // not run: it does not fit
  const StatusOr<double> seconds = (*measurer_)(placement);
  if (!seconds.ok()) {
    simulated.feasible = false;
    simulated.reason = std::string(seconds.status().message());
    return simulated;
  }
  simulated.value = *seconds;
  return simulated;
}

}  // namespace dplace::sim
