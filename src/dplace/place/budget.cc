#include "dplace/place/budget.h"

#include <algorithm>

#include "dplace/base/interrupt.h"

namespace dplace::place {

Budget::Budget(const Limits& limits, const sim::Evaluator& evaluator, int64_t default_evaluations)
    : limits_(limits),
      evaluator_(evaluator),
      start_(std::chrono::steady_clock::now()),
      first_(evaluator.evaluations()) {
  if (limits_.evaluations <= 0 && limits_.seconds <= 0) limits_.evaluations = default_evaluations;
}

double Budget::Elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

int64_t Budget::Evaluations() const { return evaluator_.evaluations() - first_; }

double Budget::Spent() const {
  if (Interrupted()) return 1;  // a stop was asked for (base/interrupt.h): every budget is out
  double spent = limits_.seconds > 0 ? Elapsed() / limits_.seconds : 0;
  if (limits_.evaluations > 0) {
    spent = std::max(spent,
                     static_cast<double>(Evaluations()) / static_cast<double>(limits_.evaluations));
  }
  return spent;
}

Limits Budget::Remaining() const { return Split(1); }

Limits Budget::Split(double share) const {
  Limits out;
  if (Interrupted()) return {.evaluations = 1, .seconds = 1e-3};
  if (limits_.seconds > 0) {
    out.seconds = std::max(share * std::max(0.0, limits_.seconds - Elapsed()), 1e-3);
  }
  if (limits_.evaluations > 0) {
    const int64_t left = std::max<int64_t>(0, limits_.evaluations - Evaluations());
    out.evaluations = std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(left) * share));
  }
  return out;
}

Limits Budget::Parallel(int n) const {
  Limits out = Remaining();
  if (limits_.evaluations > 0) {
    out.evaluations = std::max<int64_t>(0, limits_.evaluations - Evaluations()) / n;
  }
  return out;
}

}  // namespace dplace::place
