// `chains`: linear clustering, then clusters moved whole by the evaluator. Kim and Browne's linear
// clustering (ICPP 1988) takes the longest path of the ops not yet clustered (each op at its
// fastest time, each tensor at its mean transfer time over the links between distinct devices) as
// one cluster, and again on what is left; clusters that share a co-location unit merge. A chain
// that is one cluster runs with no transfer inside it, and on a device of its own nothing delays
// it, which is what the recurrent chain of an unrolled RNN needs. The clusters, largest compute
// first, then move whole: each to the device where the step is shortest, in passes until none
// improves or the budget is spent, from PlaceContext::start when the caller gives one, else from
// the better of `single` and `contiguous` (ChainsStart, search/start.h). Proposals are
// simulated incrementally. Budget: --time-limit and evaluations (without either, 20 per unit, at
// least 2,000 and at most 20,000). Deterministic.
#pragma once

#include <memory>
#include <vector>

#include "dplace/place/placer.h"
#include "dplace/place/units.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeChainsPlacer();

// The linear clusters of the problem's ops (cluster index per op, 0 for the longest path), before
// merging by co-location. Exposed for tests.
std::vector<int> LinearClusters(const sim::Problem& problem);

// The linear clusters as groups of `units` (merged where a unit spans clusters), largest compute
// first; each group lists its units in unit order.
std::vector<std::vector<size_t>> ChainGroups(const sim::Problem& problem,
                                             const std::vector<Unit>& units);

}  // namespace dplace::place
