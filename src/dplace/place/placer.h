// The Placer interface: one object per algorithm. Place() checks the output (one valid device per
// op) around the algorithm's PlaceImpl(); infeasible results are data (the evaluator says why), a
// malformed placement is a bug (Internal). On a problem that is infeasible whatever the placement
// (Problem::infeasible_reason) Place() does not search: it says so in the note. PlaceContext
// carries everything per run: evaluator, seed, budget, and a given plan for placers that start from
// one.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/problem.h"

namespace dplace::place {

struct Budget {
  int64_t max_evaluations = 0;  // 0: no limit
  double time_limit_s = 0;      // 0: no limit
};

struct PlaceContext {
  sim::Evaluator* evaluator = nullptr;  // judges placements by the problem's objective
  uint64_t seed = 1;                    // same seed, same placement
  Budget budget;
  const sim::Placement* given_plan = nullptr;  // e.g. from --plan; used by `expert`
  // Where chains, local_search and mcmc start instead of their own heuristics (the portfolio
  // hands each search the best placement of the members before it).
  const sim::Placement* start = nullptr;
  std::vector<std::string> portfolio;  // members of `portfolio` (--portfolio); empty: default
  // Set by the placer for the user: what it proved or why it stopped ("optimal", "time limit").
  std::string note;
  // Set by the placer when it proves a lower bound on the best value any placement can reach.
  double lower_bound = 0;
};

class Placer {
 public:
  virtual ~Placer() = default;
  virtual std::string_view name() const = 0;
  // Places every op of `problem`. Errors: InvalidInput for what the user must fix (a missing plan),
  // Internal when the algorithm returned a malformed placement.
  StatusOr<sim::Placement> Place(const sim::Problem& problem, PlaceContext& context);

 private:
  virtual StatusOr<sim::Placement> PlaceImpl(const sim::Problem& problem,
                                             PlaceContext& context) = 0;
};

}  // namespace dplace::place
