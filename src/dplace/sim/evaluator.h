// Evaluators judge placements of one problem by the problem's objective: the step simulator for
// `step`, the max-load model for `throughput`, the call model for `latency`, the schedule for
// `pipeline` (MakeEvaluator picks it from the objective table, objectives.h). Every evaluator
// evaluates, counts its evaluations (so placers keep budgets) and forks (a copy for a search's
// second thread). Only the step simulator can also evaluate incrementally, give up early and name
// the critical path (and time a run: EvaluateTimed): the IncrementalEvaluator that Incremental()
// returns, which the searches and the learning environment ask for explicitly. Evaluators share
// ownership of their problem.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "dplace/sim/evaluation.h"
#include "dplace/sim/problem.h"

namespace dplace::sim {

class IncrementalEvaluator;

class Evaluator {
 public:
  virtual ~Evaluator() = default;
  // Full evaluation: value, feasibility with reason, lower bound, per-device report. Counts one
  // (an evaluator that simulates several models counts one per model: robust_evaluator.h).
  Evaluation Evaluate(const Placement& placement) {
    ++evaluations_;
    return EvaluateImpl(placement);
  }
  // Evaluate, and where the objective simulates a step, its Timing (cleared otherwise). Counts as
  // Evaluate counts: an observer pays what a search pays.
  Evaluation EvaluateTimed(const Placement& placement, Timing* timing) {
    ++evaluations_;
    return EvaluateTimedImpl(placement, timing);
  }
  // Number of evaluations so far (incremental ones and critical paths included), and the way back
  // for those a fork made.
  int64_t evaluations() const { return evaluations_; }
  void CountEvaluations(int64_t n) { evaluations_ += n; }
  // A new evaluator of the same problem with no base and no count (one evaluator is never used by
  // two threads at once).
  virtual std::unique_ptr<Evaluator> Fork() const = 0;
  // The incremental capabilities when this evaluator has them (objective step); null otherwise.
  virtual IncrementalEvaluator* Incremental() { return nullptr; }
  const Problem& problem() const { return *problem_; }

 protected:
  explicit Evaluator(std::shared_ptr<const Problem> problem) : problem_(std::move(problem)) {}
  void Count() { ++evaluations_; }
  const std::shared_ptr<const Problem>& shared_problem() const { return problem_; }

 private:
  virtual Evaluation EvaluateImpl(const Placement& placement) = 0;
  virtual Evaluation EvaluateTimedImpl(const Placement& placement, Timing* timing) {
    *timing = {};
    return EvaluateImpl(placement);
  }

  std::shared_ptr<const Problem> problem_;
  int64_t evaluations_ = 0;
};

// What the step simulator adds, for searches that move a few ops at a time.
class IncrementalEvaluator {
 public:
  virtual ~IncrementalEvaluator() = default;
  // After SetBase(b), EvaluateNear(p) returns exactly Evaluate(p) (and counts as one evaluation),
  // faster when p differs from b in a few ops (StepSimulator::RunNear). A search that rejects
  // every placement worse than `give_up_above` lets the simulation stop early on one: it then
  // returns an infeasible evaluation with a value above it.
  virtual void SetBase(const Placement& base) = 0;
  virtual Evaluation EvaluateNear(
      const Placement& placement,
      double give_up_above = std::numeric_limits<double>::infinity()) = 0;
  // The ops the step time waits for (StepSimulator::CriticalPath). Counts as one evaluation.
  virtual std::vector<OpId> CriticalPath(const Placement& placement) = 0;
};

// The evaluator of `problem`'s objective.
std::unique_ptr<Evaluator> MakeEvaluator(std::shared_ptr<const Problem> problem);

}  // namespace dplace::sim
