// `metis`: the MinCut-style partitioner baseline of Mirhoseini et al. 2017 — METIS's k-way
// partition (Debian libmetis-dev) of the co-location unit graph (partition/unit_graph.h), one part
// per device with target part weights proportional to device speed, minimising the cut transfer
// time. Disallowed devices and memory overflows are repaired as for `scotch`.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeMetisPlacer();

}  // namespace dplace::place
