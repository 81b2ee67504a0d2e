// Evaluator judges placements of one problem by the problem's objective: the step simulator for
// `step`, the max-load model for `throughput`, the call model for `latency`. It counts evaluations,
// so placers can keep budgets.
#pragma once

#include <cstdint>

#include "dplace/sim/latency.h"
#include "dplace/sim/max_load.h"
#include "dplace/sim/step_sim.h"

namespace dplace::sim {

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Full evaluation: value, feasibility with reason, lower bound, per-device report.
  virtual Evaluation Evaluate(const Placement& placement) = 0;
  // Number of Evaluate calls so far.
  virtual int64_t evaluations() const = 0;
};

class SimulatedEvaluator : public Evaluator {
 public:
  explicit SimulatedEvaluator(const Problem& problem)
      : problem_(problem), step_(problem), max_load_(problem), latency_(problem) {}
  Evaluation Evaluate(const Placement& placement) override;
  int64_t evaluations() const override { return evaluations_; }

 private:
  const Problem& problem_;
  StepSimulator step_;
  MaxLoadEvaluator max_load_;
  LatencyEvaluator latency_;
  int64_t evaluations_ = 0;
};

}  // namespace dplace::sim
