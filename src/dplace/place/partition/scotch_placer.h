// `scotch`: the graph-partitioner baseline of Mirhoseini et al. 2017 and Tarnawski et al. 2020. The
// co-location units become the vertices of an undirected graph (vertex weight: compute time; edge
// weight: the transfer cost of the tensors between two units), which Scotch maps onto a weighted
// complete architecture, one part per device, parts weighted by device speed (unit_graph.h). Units
// placed on a device they may not run on move to their fastest allowed device, and units past a
// device's memory move to the fastest allowed device with room.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeScotchPlacer();

}  // namespace dplace::place
