// `contiguous`: the co-location units in topological order cut into k contiguous runs, one per
// accelerator, with the fewest bytes crossing the cuts that memory allows; the best k by the
// evaluator. A step of a mostly sequential network runs fastest on one device; when one device
// cannot hold it, the cheapest cuts cost least. For each k from 1 to the number of accelerators,
// a dynamic program over the cut positions minimises the bytes of the tensors that cross a cut
// (a tensor counts once per cut it spans) with every run's static footprint (parameters, scratch
// and outputs of its units) within its device's memory, then again with the footprints scaled
// down to the simulated peak of one device (the step frees tensors, so the static footprint
// overstates it). Accelerators are visited in a chain that follows the fastest links; units no
// accelerator may run go to their fastest allowed device (the host CPU). Deterministic.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeContiguousPlacer();

}  // namespace dplace::place
