#include "dplace/sim/robust_evaluator.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace dplace::sim {

size_t QuantileRank(size_t count, double q) {
  const auto rank = static_cast<size_t>(std::ceil(q * static_cast<double>(count)));
  return std::clamp<size_t>(rank, 1, std::max<size_t>(count, 1)) - 1;
}

RobustEvaluator::RobustEvaluator(std::shared_ptr<const Problem> base,
                                 std::vector<std::shared_ptr<const Problem>> variants,
                                 double quantile)
    : Evaluator(std::move(base)), variants_(std::move(variants)), quantile_(quantile) {
  std::vector<double> bounds;
  for (const auto& v : variants_) {
    evaluators_.push_back(MakeEvaluator(v));
    incremental_.push_back(evaluators_.back()->Incremental());
    bounds.push_back(v->lower_bound);
  }
  if (std::find(incremental_.begin(), incremental_.end(), nullptr) != incremental_.end()) {
    incremental_.clear();
  }
  std::sort(bounds.begin(), bounds.end());
  lower_bound_ = bounds.empty() ? 0 : bounds[QuantileRank(bounds.size(), quantile_)];
  evaluations_.resize(variants_.size());
  order_.resize(variants_.size());
  std::iota(order_.begin(), order_.end(), size_t{0});
}

std::unique_ptr<Evaluator> RobustEvaluator::Fork() const {
  return std::make_unique<RobustEvaluator>(shared_problem(), variants_, quantile_);
}

IncrementalEvaluator* RobustEvaluator::Incremental() {
  return incremental_.empty() ? nullptr : this;
}

void RobustEvaluator::SetBase(const Placement& base) {
  for (IncrementalEvaluator* v : incremental_) v->SetBase(base);
}

void RobustEvaluator::EvaluateAll(const Placement& placement) {
  for (size_t k = 0; k < evaluators_.size(); ++k) {
    evaluations_[k] = evaluators_[k]->Evaluate(placement);
  }
}

size_t RobustEvaluator::RankVariant() const {
  std::vector<size_t> by_value(evaluations_.size());
  std::iota(by_value.begin(), by_value.end(), size_t{0});
  std::stable_sort(by_value.begin(), by_value.end(), [&](size_t a, size_t b) {
    return evaluations_[a].value < evaluations_[b].value;
  });
  return by_value[QuantileRank(by_value.size(), quantile_)];
}

Evaluation RobustEvaluator::Combine() const {
  Evaluation e = evaluations_[RankVariant()];
  e.objective = problem().objective;
  e.feasible = true;
  e.reason.clear();
  for (size_t k = 0; k < evaluations_.size(); ++k) {
    if (evaluations_[k].feasible) continue;
    e.feasible = false;
    e.reason = "variant " + std::to_string(k) + ": " + evaluations_[k].reason;
    break;
  }
  return e;
}

Evaluation RobustEvaluator::EvaluateImpl(const Placement& placement) {
  CountEvaluations(static_cast<int64_t>(evaluators_.size()) - 1);
  EvaluateAll(placement);
  return Combine();
}

Evaluation RobustEvaluator::EvaluateTimedImpl(const Placement& placement, Timing* timing) {
  CountEvaluations(static_cast<int64_t>(evaluators_.size()) - 1);
  timings_.resize(evaluators_.size());
  for (size_t k = 0; k < evaluators_.size(); ++k) {
    evaluations_[k] = evaluators_[k]->EvaluateTimed(placement, &timings_[k]);
  }
  *timing = timings_[RankVariant()];
  return Combine();
}

Evaluation RobustEvaluator::EvaluateNear(const Placement& placement, double give_up_above) {
  const size_t count = evaluators_.size();
  // The quantile exceeds the threshold once this many values do.
  const size_t enough = count - QuantileRank(count, quantile_);
  size_t above = 0;
  double least_above = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < count; ++i) {
    const size_t k = order_[i];
    Count();
    evaluations_[k] = incremental_[k]->EvaluateNear(placement, give_up_above);
    if (!(evaluations_[k].value > give_up_above)) continue;
    least_above = std::min(least_above, evaluations_[k].value);
    if (++above < enough) continue;
    // The variant that settled it is tried first next time: the next proposal is likely to be
    // given up on there too.
    std::rotate(order_.begin(), order_.begin() + static_cast<std::ptrdiff_t>(i),
                order_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    Evaluation e;
    e.objective = problem().objective;
    e.value = least_above;  // at least `enough` variants take longer: so does the quantile
    e.feasible = false;
    e.reason = "the robust value is more than " + std::to_string(give_up_above) + " s";
    return e;
  }
  // The quantile is at most the threshold, so the variants above it rank above the quantile and
  // their values do not matter; their feasibility does: any given up on (no devices) runs again.
  for (size_t k = 0; k < count; ++k) {
    if (!evaluations_[k].devices.empty()) continue;
    Count();
    evaluations_[k] = incremental_[k]->EvaluateNear(placement);
  }
  return Combine();
}

std::vector<OpId> RobustEvaluator::CriticalPath(const Placement& placement) {
  CountEvaluations(static_cast<int64_t>(evaluators_.size()) + 1);
  EvaluateAll(placement);
  return incremental_[RankVariant()]->CriticalPath(placement);
}

RobustJudgement RobustEvaluator::Judge(const Placement& placement) {
  const Evaluation e = Evaluate(placement);
  RobustJudgement j;
  j.quantile = quantile_;
  j.value = e.value;
  j.feasible = e.feasible;
  j.reason = e.reason;
  for (const Evaluation& v : evaluations_) j.values.push_back(v.value);
  std::vector<double> sorted = j.values;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  j.median = n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  j.worst = sorted.back();
  return j;
}

StatusOr<std::unique_ptr<RobustEvaluator>> MakeRobustEvaluator(std::shared_ptr<const Problem> base,
                                                               const RobustOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(auto variants, RobustVariants(*base, options));
  return std::make_unique<RobustEvaluator>(std::move(base), std::move(variants), options.quantile);
}

}  // namespace dplace::sim
