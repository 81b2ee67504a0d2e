// Coarsening for large graphs: place a smaller graph whose ops stand for runs of the original's,
// then give every original op its coarse op's device (docs/coarsening.md).
//
// The coarse ops are intervals of a depth-first topological order (a chain of ops stays in one
// interval), so the coarse graph is acyclic by construction. An interval holds ops of one set of
// allowed device kinds, at most `max_op_share` of the graph's work, and grouped ops of co-location
// groups whose union stays within the same share; groups an interval joins become one coarse
// group, so co-location holds after un-coarsening. A coarse op's time on each device is the sum of
// its ops' times; its outputs are the tensors read outside it (and those nobody reads).
#pragma once

#include <memory>
#include <vector>

#include "dplace/place/placer.h"
#include "dplace/sim/problem.h"

namespace dplace::place {

struct CoarsenOptions {
  int target_ops = 2000;  // aim: about this many coarse ops
  bool refine = true;     // refine on the original graph with the rest of the time limit
};

struct Coarsening {
  std::shared_ptr<const sim::Problem> problem;  // same cluster and objective
  sim::PerOp<sim::OpId> coarse_of;              // original op -> coarse op

  // The original ops' placement: each op on its coarse op's device.
  sim::Placement Expand(const sim::Placement& coarse) const;
};

StatusOr<Coarsening> Coarsen(const sim::Problem& problem, const CoarsenOptions& options);

// Coarsens `problem` when it has more than 2 × target ops, places the coarse problem with
// `placer`, un-coarsens, and, when asked and the request has a time limit, refines the result on
// the original graph with local search (from it, so never worse) for the last quarter of it.
// Smaller problems are placed directly. The note says what was done ("coarsened 50000 -> 2013 ops;
// ...").
StatusOr<PlaceResult> PlaceCoarsened(Placer& placer, const sim::Problem& problem,
                                     const PlaceRequest& request, const CoarsenOptions& options);

}  // namespace dplace::place
