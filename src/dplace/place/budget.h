// A placer's budget while it runs: the request's limits, counted from when the Budget is made, on
// the evaluations of one evaluator. Every placer that spends or shares a budget does it here:
// Spent() says how far it is (the closer of the two limits), Remaining() what is left, Split()
// what to hand a member or a phase. No placer does budget arithmetic of its own.
#pragma once

#include <chrono>
#include <cstdint>

#include "dplace/base/interrupt.h"
#include "dplace/place/placer.h"

namespace dplace::place {

class Budget {
 public:
  // `default_evaluations` stands for the evaluation limit when the limits set neither evaluations
  // nor seconds (a search's own stopping rule); 0: none.
  Budget(const Limits& limits, const sim::Evaluator& evaluator, int64_t default_evaluations = 0);

  double Elapsed() const;       // seconds since the Budget was made
  int64_t Evaluations() const;  // evaluations made since
  // Fraction of the budget spent, by whichever limit is closer (0 when there is none).
  double Spent() const;
  bool Out() const { return Spent() >= 1; }
  // Whether the time limit (if any) has passed, whatever the evaluations: for work that must stop
  // where the time does (a learned placer's episode, an update's gradients).
  bool OutOfTime() const {
    return (limits().seconds > 0 && Elapsed() >= limits().seconds) || Interrupted();
  }
  // What is left of each limit (0 where there is none; at least 1 evaluation and 1 ms where there
  // is one, so that a member handed it stops at once rather than running unbounded).
  Limits Remaining() const;
  // `share` (0–1) of what is left of each limit, for a member or a phase that runs next.
  Limits Split(double share) const;
  // The limits of one of `n` runs side by side: the seconds left, and 1/n of the evaluations left.
  Limits Parallel(int n) const;
  const Limits& limits() const { return limits_; }

 private:
  Limits limits_;
  const sim::Evaluator& evaluator_;
  std::chrono::steady_clock::time_point start_;
  int64_t first_;
};

}  // namespace dplace::place
