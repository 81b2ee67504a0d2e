// The robust evaluator: judges a placement of a problem on K variants of it (variants.h) instead
// of on the problem itself, so that a search cannot win by details of one model. Its value is a
// quantile (by nearest rank; the worst by default) of the K variants' values; a placement is
// feasible when it is on every variant. A decorator like the others: it evaluates, forks and,
// when every variant can (objective step), evaluates incrementally, so mcmc and local_search
// optimise the robust value. Every variant simulation counts as one evaluation (docs/semantics.md,
// "Judged on variants").
#pragma once

#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/variants.h"

namespace dplace::sim {

// The 0-based position of the q-quantile by nearest rank among `count` sorted values:
// ceil(q * count) - 1, at least 0 (q in (0, 1]; q = 1: the last, the largest).
size_t QuantileRank(size_t count, double q);

// What the variants make of one placement.
struct RobustJudgement {
  double quantile = 1;         // which quantile `value` is
  double value = 0;            // that quantile of `values` (nearest rank): the robust value
  double median = 0;           // the median of `values` (the mean of the middle two for even K)
  double worst = 0;            // the largest of `values`
  bool feasible = true;        // feasible on every variant
  std::string reason;          // the first infeasible variant's reason ("variant k: ..."), or empty
  std::vector<double> values;  // variant k's value at k (K of them)
};

class RobustEvaluator final : public Evaluator, public IncrementalEvaluator {
 public:
  // Judges placements of `base` on `variants` (problems of base's graph and objective, at least
  // one), by the `quantile` of their values (in (0, 1]).
  RobustEvaluator(std::shared_ptr<const Problem> base,
                  std::vector<std::shared_ptr<const Problem>> variants, double quantile);

  std::unique_ptr<Evaluator> Fork() const override;
  // This evaluator when every variant evaluates incrementally (objective step), else null.
  IncrementalEvaluator* Incremental() override;

  // After SetBase(b) (each variant's), EvaluateNear(p) returns exactly Evaluate(p). With a finite
  // `give_up_above` it stops as soon as enough variants exceed it for the quantile to (for the
  // worst: the first one), and returns an infeasible evaluation whose value is above it and at
  // most the robust value. Counts one evaluation per variant it simulated.
  void SetBase(const Placement& base) override;
  Evaluation EvaluateNear(const Placement& placement,
                          double give_up_above = std::numeric_limits<double>::infinity()) override;
  // The critical path of the variant whose value is the robust value. Counts K + 1 evaluations
  // (every variant in full, then that one's path).
  std::vector<OpId> CriticalPath(const Placement& placement) override;

  // Every variant's full evaluation of `placement`, summed up. Counts K evaluations.
  RobustJudgement Judge(const Placement& placement);

  int num_variants() const { return static_cast<int>(variants_.size()); }
  double quantile() const { return quantile_; }
  // The quantile of the variants' lower bounds: a lower bound on the robust value of any placement
  // (a quantile of K values is monotone in each of them).
  double lower_bound() const { return lower_bound_; }

 private:
  // Counts one (the base class did) plus K - 1.
  Evaluation EvaluateImpl(const Placement& placement) override;
  // The same count; the Timing of the variant at the quantile's rank (the one the value is).
  Evaluation EvaluateTimedImpl(const Placement& placement, Timing* timing) override;
  // Every variant's evaluation of `placement` into evaluations_ (full runs).
  void EvaluateAll(const Placement& placement);
  // The robust evaluation of the per-variant evaluations in evaluations_ (all exact).
  Evaluation Combine() const;
  // The variant at the quantile's rank among evaluations_ (ties: the lower k).
  size_t RankVariant() const;

  std::vector<std::shared_ptr<const Problem>> variants_;
  std::vector<std::unique_ptr<Evaluator>> evaluators_;
  std::vector<IncrementalEvaluator*> incremental_;  // empty unless every variant has one
  double quantile_;
  double lower_bound_ = 0;
  std::vector<Evaluation> evaluations_;  // per variant: the last evaluation
  std::vector<Timing> timings_;          // per variant: the last EvaluateTimed's
  std::vector<size_t> order_;            // the order EvaluateNear tries the variants in
};

// The robust evaluator of `base` with the variants `options` asks for (RobustVariants).
// InvalidInput as CheckRobustOptions.
StatusOr<std::unique_ptr<RobustEvaluator>> MakeRobustEvaluator(std::shared_ptr<const Problem> base,
                                                               const RobustOptions& options);

}  // namespace dplace::sim
