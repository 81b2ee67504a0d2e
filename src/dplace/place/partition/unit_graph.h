// What the graph partitioners (`scotch`, `metis`) see: co-location units as vertices weighted by
// compute time on the fastest device, undirected edges weighted by the transfer time of the
// tensors between two units (over a link between two distinct devices), and device speeds (the
// inverse of the graph's total compute time on each device) for balancing. And the way back: a
// part per unit becomes a placement, with disallowed devices replaced and memory overflows moved.
#pragma once

#include <vector>

#include "dplace/place/units.h"
#include "dplace/sim/problem.h"

namespace dplace::place {

// The partitioners' arrays are plain: unit u is vertex u.index().
struct UnitGraph {
  Units units;
  PerUnit<double> vertex_s;
  std::vector<int> offsets, neighbours;  // CSR, both directions
  std::vector<double> edge_s;            // per CSR entry
  sim::PerDevice<double> speed;          // relative
};

UnitGraph MakeUnitGraph(const sim::Problem& problem);

// Integer weights for the partitioners: `values` scaled so the largest becomes `scale`, each >= 1.
std::vector<long long> ScaledWeights(const std::vector<double>& values, double scale);

// Unit u on device part[u.index()]; a unit whose part it may not run on goes to its fastest allowed
// device. Then, while a device's static footprint exceeds its memory, its last units (in
// topological order) move to the fastest allowed device with room.
sim::Placement PartsToPlacement(const sim::Problem& problem, const UnitGraph& graph,
                                const std::vector<int>& part);

}  // namespace dplace::place
