// List scheduling placers (step objective): one scheduler, four policies.
//   heft    HEFT (Topcuoglu et al. 2002): ops by upward rank (mean compute + mean transfer along
//           the longest path to a sink), each to the device where it finishes earliest;
//   m_topo  Baechi's m-TOPO (Jeon et al., SoCC 2020): units in topological order fill one device
//           after another, each up to an equal share of the total footprint (or its capacity);
//   m_etf   Baechi's m-ETF: repeatedly the ready (op, device) pair that can start earliest;
//   m_sct   Baechi's m-SCT: m-ETF plus favourite children from the LP relaxation of Hanen and
//           Munier's small-communication-time program (solved with CBC's LP solver, CLP): a
//           favourite child goes to its parent's device.
// All are memory-aware (a unit only goes where its static footprint fits while some device has
// room) and respect co-location (a unit's first op decides the device of all its ops).
#pragma once

#include <memory>
#include <string_view>

#include "dplace/place/placer.h"

namespace dplace::place {

enum class ListPolicy { kHeft, kTopo, kEtf, kSct };

std::unique_ptr<Placer> MakeListSchedulerPlacer(ListPolicy policy);

// Baechi's favourite children: for each op, the consumer to keep on its device (-1: none), from
// the LP relaxation rounded at 1/2. Exposed for tests. Empty when the LP could not be solved.
sim::PerOp<sim::OpId> FavouriteChildren(const sim::Problem& problem, double time_limit_s);

}  // namespace dplace::place
