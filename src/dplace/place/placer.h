// The Placer interface and its request and result. A placer gets a problem and a PlaceRequest
// (evaluator, seed, limits, an optional start) and returns a PlaceResult (placement, note, a bound
// it proved, what it spent); nothing flows back through the request. Place() checks the output (one
// valid device per op) around the algorithm's PlaceImpl(); infeasible results are data (the
// evaluator says why), a malformed placement is a bug (Internal). On a problem that is infeasible
// whatever the placement (Problem::infeasible_reason) Place() does not search: it says so in the
// note. Budget (budget.h) is what a running placer spends its limits with.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/problem.h"

namespace dplace::place {

// What a run may spend; 0 means no limit. Evaluations are what the request's evaluator counts: one
// per call, one per variant simulated for the robust evaluator (sim/robust_evaluator.h); for `ilp`,
// CBC's branch-and-bound nodes.
struct Limits {
  int64_t evaluations = 0;
  double seconds = 0;
};

struct PlaceRequest {
  sim::Evaluator* evaluator = nullptr;  // judges placements by the problem's objective
  uint64_t seed = 1;                    // same seed, same placement
  Limits limits;
  // Where to begin (a plan the user gave, the best placement of a portfolio's earlier members, a
  // policy's placement): the searches start from it instead of their own heuristics, and `expert`
  // returns it. Null: none. Ignored unless it has one device per op.
  const sim::Placement* start = nullptr;
  // A search that can (mcmc) keeps the moves it kept that improved its current placement, in
  // PlaceResult::improving: what `dplace train --improving` imitates.
  bool record_improving = false;
};

// The start of `request` when it fits `problem` (one device per op), else null.
const sim::Placement* StartOf(const sim::Problem& problem, const PlaceRequest& request);

struct PlaceStats {
  int64_t evaluations = 0;  // of the request's evaluator, this run's own
  double seconds = 0;       // wall time of the run
};

// A move a search kept that improved its current placement: the placement before it and after.
struct ImprovingMove {
  sim::Placement before, after;
};

struct PlaceResult {
  sim::Placement placement;
  // What the placer says of its result for the user: what it proved or why it stopped.
  std::string note;
  // A lower bound on the best value any placement can reach that the placer proved (e.g. an
  // integer program's bound); 0: none. The run service raises the problem's bound with it.
  double proven_bound = 0;
  PlaceStats stats;  // set by Placer::Place
  // With PlaceRequest::record_improving, a search's improving moves in the order it kept them
  // (mcmc: chain after chain): the same for a seed, as the placement is.
  std::vector<ImprovingMove> improving;
  // Where the placer chose replicas (Problem::replicas_auto): every device of the problem in one
  // group, the placement's devices each its group's first; the plan is then of
  // sim::GroupedProblem(problem, groups). Empty: one replica a stage.
  std::vector<std::vector<sim::DeviceId>> groups;
};

class Placer {
 public:
  virtual ~Placer() = default;
  virtual std::string_view name() const = 0;
  // Places every op of `problem`. Errors: InvalidInput for what the user must fix, Internal when
  // the algorithm returned a malformed placement.
  StatusOr<PlaceResult> Place(const sim::Problem& problem, const PlaceRequest& request);

 private:
  virtual StatusOr<PlaceResult> PlaceImpl(const sim::Problem& problem,
                                          const PlaceRequest& request) = 0;
};

}  // namespace dplace::place
