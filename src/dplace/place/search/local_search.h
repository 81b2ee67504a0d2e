// Local search on any evaluator (the NeurIPS 2020 paper's baseline, also used for the step
// objective): restarts, the first from the given plan (--plan; each co-location unit on its first
// op's device) or else the best of the fast heuristics (search/start.h), the others from a
// random assignment of co-location units to allowed devices; from each, move one unit at a time to
// the device that improves the evaluation most, until no move helps. Infeasible placements rank
// after feasible ones (then by value). Budget: --time-limit and the evaluation count; same seed,
// same result.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

struct LocalSearchOptions {
  int restarts = 10;  // the paper's setting
};

std::unique_ptr<Placer> MakeLocalSearchPlacer(LocalSearchOptions options = {});

}  // namespace dplace::place
