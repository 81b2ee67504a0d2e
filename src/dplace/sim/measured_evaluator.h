// The measured evaluator: judges a placement by a step run for real and timed (dplace.torch's
// measure, through the Python module's `measure=`) instead of by the simulation, as Mirhoseini et
// al. rewarded their policy with measured step times. A decorator like the robust one: what it
// cannot measure it takes from the problem's own evaluator (feasibility and memory, so a placement
// that does not fit is never run; the Timing a guided search reads), and it evaluates
// "incrementally" by measuring in full, so every search that asks for the incremental interface
// searches by measured values. Each measurement counts one evaluation; a critical path (simulated)
// counts one as the interface says. Measurements are made one at a time, whatever the threads
// (two at once would slow each other): a Measurer serialises them.
#pragma once

#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/evaluator.h"

namespace dplace::sim {

// Seconds of a real step of the model placed as `placement` places it; an error when it cannot be
// measured.
using MeasureFunction = std::function<StatusOr<double>(const Placement&)>;

// A measure function called by one thread at a time; the first error it returned is kept.
class Measurer {
 public:
  explicit Measurer(MeasureFunction measure) : measure_(std::move(measure)) {}
  // The measured seconds, or the function's error (a value that is not a positive finite number
  // is one: "measure: returned X").
  StatusOr<double> operator()(const Placement& placement) const;
  // OK, or the first error any measurement returned.
  Status first_error() const;

 private:
  MeasureFunction measure_;
  mutable std::mutex mutex_;
  mutable Status first_error_;
};

class MeasuredEvaluator final : public Evaluator, public IncrementalEvaluator {
 public:
  MeasuredEvaluator(std::shared_ptr<const Problem> problem,
                    std::shared_ptr<const Measurer> measurer);

  std::unique_ptr<Evaluator> Fork() const override;
  // This evaluator when the problem's own evaluates incrementally (objective step), else null.
  IncrementalEvaluator* Incremental() override;

  void SetBase(const Placement& base) override;
  // A measurement in full (the measured value is never given up on). Counts one.
  Evaluation EvaluateNear(const Placement& placement,
                          double give_up_above = std::numeric_limits<double>::infinity()) override;
  // The simulation's critical path. Counts one.
  std::vector<OpId> CriticalPath(const Placement& placement) override;

 private:
  // The simulation's evaluation with the measured value; an infeasible placement as simulated
  // (not run); a failed measurement infeasible with "measure: ..." as its reason.
  Evaluation EvaluateImpl(const Placement& placement) override;
  Evaluation EvaluateTimedImpl(const Placement& placement, Timing* timing) override;
  Evaluation Measured(Evaluation simulated, const Placement& placement) const;

  std::shared_ptr<const Measurer> measurer_;
  std::unique_ptr<Evaluator> simulated_;
};

}  // namespace dplace::sim
