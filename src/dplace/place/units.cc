#include "dplace/place/units.h"

#include <limits>

#include "dplace/sim/constraints.h"

namespace dplace::place {

std::vector<Unit> MakeUnits(const sim::Problem& p) {
  const graph::Graph& g = p.g();
  std::vector<int> unit_of_group(g.groups().size(), -1);
  std::vector<Unit> units;
  for (sim::OpId op : g.TopologicalOrder()) {
    const graph::GroupId grp = g.op(op).colocation;
    int index;
    if (grp != graph::kNoGroup && unit_of_group[static_cast<size_t>(grp)] >= 0) {
      index = unit_of_group[static_cast<size_t>(grp)];
    } else {
      index = static_cast<int>(units.size());
      units.emplace_back();
      if (grp != graph::kNoGroup) unit_of_group[static_cast<size_t>(grp)] = index;
    }
    Unit& u = units[static_cast<size_t>(index)];
    u.ops.push_back(op);
    u.footprint_bytes += sim::OpFootprintBytes(g, op);
  }
  for (Unit& u : units) {
    for (sim::DeviceId d = 0; d < p.num_devices(); ++d) {
      bool ok = true;
      for (sim::OpId op : u.ops) ok = ok && p.Allowed(op, d);
      if (ok) u.devices.push_back(d);
    }
  }
  return units;
}

sim::DeviceId FirstFit(const sim::Problem& p, const Unit& unit,
                       const std::vector<sim::DeviceId>& candidates, std::vector<double>* used) {
  sim::DeviceId best = candidates.empty() ? 0 : candidates.front();
  double best_room = -std::numeric_limits<double>::infinity();
  for (sim::DeviceId d : candidates) {
    const double room = p.c().device(d).memory_bytes - (*used)[static_cast<size_t>(d)];
    if (room >= unit.footprint_bytes) {
      best = d;
      break;
    }
    if (room > best_room) {
      best_room = room;
      best = d;
    }
  }
  (*used)[static_cast<size_t>(best)] += unit.footprint_bytes;
  return best;
}

}  // namespace dplace::place
