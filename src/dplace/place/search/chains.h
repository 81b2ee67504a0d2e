// `chains`: linear clustering, then clusters moved whole by the evaluator. Kim and Browne's linear
// clustering (ICPP 1988) takes the longest path of the ops not yet clustered (each op at its
// fastest time, each tensor at its mean transfer time over the links between distinct devices) as
// one cluster, and again on what is left; clusters that share a co-location unit merge. A chain
// that is one cluster runs with no transfer inside it, and on a device of its own nothing delays
// it, which is what the recurrent chain of an unrolled RNN needs. The clusters, largest compute
// first, then move whole: each to the device where the step is shortest, in passes until none
// improves or the budget is spent, from PlaceRequest::start when the caller gives one, else from
// the better of `single` and `contiguous` (PlacerTraits::own_start). Proposals are simulated
// incrementally. Budget: --time-limit and evaluations (without either, 20 per unit, at least 2,000
// and at most 20,000: ChainsOptions). Deterministic.
#pragma once

#include <memory>
#include <vector>

#include "dplace/place/options.h"
#include "dplace/place/placer.h"
#include "dplace/place/traits.h"
#include "dplace/place/units.h"

namespace dplace::place {

struct ChainsOptions {
  // Paths taken one by one; the ops left after this many become clusters of one op each, so that
  // clustering stays O(max_paths × (ops + edges)) on wide graphs.
  int max_paths = 2048;
  // Without --time-limit or --evaluations: this many evaluations per unit, clamped to the two
  // limits below.
  int64_t evaluations_per_unit = 20;
  int64_t min_evaluations = 2000;
  int64_t max_evaluations = 20000;
};
void ReadOptions(OptionReader& reader, ChainsOptions* options);
// Without a start in the request, chains begins from the best placement of `own_start` (the
// table's own-start members: single and contiguous).
std::unique_ptr<Placer> MakeChainsPlacer(ChainsOptions options, std::vector<Member> own_start);

// The linear clusters of the problem's ops (cluster index per op, 0 for the longest path), before
// merging by co-location. Exposed for tests.
IdVector<sim::OpId, int> LinearClusters(const sim::Problem& problem, int max_paths = 2048);

// The linear clusters as groups of `units` (merged where a unit spans clusters), largest compute
// first; each group lists its units in unit order.
std::vector<std::vector<UnitId>> ChainGroups(const sim::Problem& problem, const Units& units,
                                             int max_paths = 2048);

}  // namespace dplace::place
