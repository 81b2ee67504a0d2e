// What the search placers share: how placements rank (feasible first, then the smaller value) and
// the budget of a run (evaluations and seconds, counted from the placer's start).
#pragma once

#include <chrono>
#include <limits>

#include "dplace/place/placer.h"

namespace dplace::place {

struct Score {
  bool feasible = false;
  double value = std::numeric_limits<double>::infinity();
  bool operator<(const Score& o) const {
    return feasible != o.feasible ? feasible : value < o.value;
  }
};

inline Score ScoreOf(const sim::Evaluation& e) { return Score{e.feasible, e.value}; }

// The value a placement must stay below to beat `s` (none while `s` is infeasible): the
// give_up_above of Evaluator::EvaluateNear for a search that only takes improvements.
inline double ToBeat(const Score& s) {
  return s.feasible ? s.value : std::numeric_limits<double>::infinity();
}

// Whether `s` is as good as any placement can be: feasible and at the problem's lower bound
// (within rounding). A search stops there; its budget could buy nothing better.
inline bool AtLowerBound(const sim::Problem& p, const Score& s) {
  return s.feasible && p.LowerBound() > 0 && s.value <= p.LowerBound() * (1 + 1e-9);
}

class BudgetClock {
 public:
  explicit BudgetClock(const PlaceContext& ctx)
      : ctx_(ctx), start_(std::chrono::steady_clock::now()), first_(ctx.evaluator->evaluations()) {}
  double Elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }
  int64_t Evaluations() const { return ctx_.evaluator->evaluations() - first_; }
  // Fraction of the budget spent, by whichever limit is closer (0 when there is none).
  double Spent(int64_t default_evaluations) const {
    double spent = 0;
    if (ctx_.budget.time_limit_s > 0) spent = Elapsed() / ctx_.budget.time_limit_s;
    const int64_t evals =
        ctx_.budget.max_evaluations > 0 ? ctx_.budget.max_evaluations : default_evaluations;
    if (evals > 0)
      spent = std::max(spent, static_cast<double>(Evaluations()) / static_cast<double>(evals));
    return spent;
  }
  bool Out(int64_t default_evaluations = 0) const { return Spent(default_evaluations) >= 1; }

 private:
  const PlaceContext& ctx_;
  std::chrono::steady_clock::time_point start_;
  int64_t first_;
};

}  // namespace dplace::place
