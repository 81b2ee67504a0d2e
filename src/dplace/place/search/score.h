// What the search placers share: how placements rank (feasible first, then the smaller value) and
// where a search starts.
#pragma once

#include <limits>
#include <memory>
#include <string>

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
// give_up_above of IncrementalEvaluator::EvaluateNear for a search that only takes improvements.
inline double ToBeat(const Score& s) {
  return s.feasible ? s.value : std::numeric_limits<double>::infinity();
}

// Whether `s` is as good as any placement can be: feasible and at the problem's lower bound
// (within rounding). A search stops there; its budget could buy nothing better.
inline bool AtLowerBound(const sim::Problem& p, const Score& s) {
  return s.feasible && p.LowerBound() > 0 && s.value <= p.LowerBound() * (1 + 1e-9);
}

// Where a search begins: a placement and its score, and where it came from.
struct Start {
  sim::Placement placement;  // empty when no heuristic could run
  Score score;
  std::string placer;  // which placer it came from ("the given start" for the request's)
};

// How a search finds its start when the request gives none (meta/best_start.h makes the usual
// one, from the heuristics the table marks): given to the searches when the table makes them.
class StartFinder {
 public:
  virtual ~StartFinder() = default;
  // The request's start when it fits the problem, else the finder's best placement (scored by
  // the request's evaluator, within the request's limits).
  virtual Start Find(const sim::Problem& problem, const PlaceRequest& request) = 0;
};

}  // namespace dplace::place
