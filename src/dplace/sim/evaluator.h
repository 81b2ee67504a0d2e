// Evaluator judges placements of one problem by the problem's objective: the step simulator for
// `step`, the max-load model for `throughput`, the call model for `latency`. It counts evaluations,
// so placers can keep budgets.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "dplace/sim/latency.h"
#include "dplace/sim/max_load.h"
#include "dplace/sim/step_sim.h"

namespace dplace::sim {

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Full evaluation: value, feasibility with reason, lower bound, per-device report.
  virtual Evaluation Evaluate(const Placement& placement) = 0;
  // Incremental evaluation, for search: after SetBase(b), EvaluateNear(p) returns exactly
  // Evaluate(p) (and counts as one evaluation), faster when p differs from b in a few ops. By
  // default SetBase does nothing and EvaluateNear evaluates in full.
  virtual void SetBase(const Placement& /*base*/) {}
  virtual Evaluation EvaluateNear(const Placement& placement) { return Evaluate(placement); }
  // EvaluateNear for a search that rejects every placement worse than `give_up_above`: the step
  // simulator may stop early on one and return an infeasible evaluation with a value above it
  // (StepSimulator::RunNear). Otherwise the same as EvaluateNear.
  virtual Evaluation EvaluateNear(const Placement& placement, double /*give_up_above*/) {
    return EvaluateNear(placement);
  }
  // The ops the step time waits for (StepSimulator::CriticalPath), for searches that aim their
  // moves; empty for the other objectives. Counts as one evaluation.
  virtual std::vector<OpId> CriticalPath(const Placement& /*placement*/) { return {}; }
  // Number of Evaluate, EvaluateNear and CriticalPath calls so far.
  virtual int64_t evaluations() const = 0;
  // A new evaluator of the same problem with no base, for a search's second thread (one evaluator
  // is never used by two threads at once), and the way back for the evaluations made with it.
  virtual std::unique_ptr<Evaluator> Fork() const = 0;
  virtual void CountEvaluations(int64_t n) = 0;
};

class SimulatedEvaluator : public Evaluator {
 public:
  explicit SimulatedEvaluator(const Problem& problem)
      : problem_(problem), step_(problem), max_load_(problem), latency_(problem) {}
  Evaluation Evaluate(const Placement& placement) override;
  // The step simulator re-simulates from its last checkpoint before the change matters
  // (StepSimulator::RunNear); the other objectives are cheap enough to evaluate in full.
  void SetBase(const Placement& base) override;
  Evaluation EvaluateNear(const Placement& placement) override;
  Evaluation EvaluateNear(const Placement& placement, double give_up_above) override;
  std::vector<OpId> CriticalPath(const Placement& placement) override;
  int64_t evaluations() const override { return evaluations_; }
  std::unique_ptr<Evaluator> Fork() const override {
    return std::make_unique<SimulatedEvaluator>(problem_);
  }
  void CountEvaluations(int64_t n) override { evaluations_ += n; }

 private:
  const Problem& problem_;
  StepSimulator step_;
  MaxLoadEvaluator max_load_;
  LatencyEvaluator latency_;
  int64_t evaluations_ = 0;
};

}  // namespace dplace::sim
