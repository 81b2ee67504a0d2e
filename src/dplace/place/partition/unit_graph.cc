#include "dplace/place/partition/unit_graph.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "dplace/cost/cost_model.h"

namespace dplace::place {

UnitGraph MakeUnitGraph(const sim::Problem& p) {
  UnitGraph ug;
  ug.units = MakeUnits(p);
  const size_t n = ug.units.size();
  const int k = p.num_devices();
  sim::PerOp<UnitId> unit_of_op(p.g().ops().size());
  for (UnitId u : ug.units.ids()) {
    for (sim::OpId op : ug.units[u].ops) unit_of_op[op] = u;
  }
  ug.speed.assign(p.c().devices().size(), 1);
  for (sim::DeviceId d : p.c().device_ids()) {
    double total = 0;
    for (sim::OpId op : p.g().op_ids()) total += p.costs.OpTime(op, d);
    ug.speed[d] = total > 0 ? 1 / total : 1;
  }
  const auto fastest = static_cast<sim::DeviceId>(
      std::max_element(ug.speed.begin(), ug.speed.end()) - ug.speed.begin());
  ug.vertex_s.assign(n, 0);
  for (UnitId u : ug.units.ids()) {
    for (sim::OpId op : ug.units[u].ops) ug.vertex_s[u] += p.costs.OpTime(op, fastest);
  }
  std::map<std::pair<UnitId, UnitId>, double> edge_cost;  // both directions
  const sim::DeviceId other = k > 1 ? sim::DeviceId(fastest == 0 ? 1 : 0) : fastest;
  for (graph::TensorId t : p.g().tensor_ids()) {
    const UnitId from = unit_of_op[p.g().tensor(t).producer];
    const double cost =
        other == fastest ? 0
                         : cost::TransferTime(p.g().tensor(t), p.c().LinkBetween(fastest, other));
    std::vector<UnitId> seen;
    for (sim::OpId c : p.g().Consumers(t)) {
      const UnitId to = unit_of_op[c];
      if (to == from || std::find(seen.begin(), seen.end(), to) != seen.end()) continue;
      seen.push_back(to);
      edge_cost[{from, to}] += cost;
      edge_cost[{to, from}] += cost;
    }
  }
  ug.offsets.assign(n + 1, 0);
  for (const auto& [ends, cost] : edge_cost) {
    ++ug.offsets[ends.first.index() + 1];
    ug.neighbours.push_back(ends.second.value());
    ug.edge_s.push_back(cost);
  }
  for (size_t u = 0; u < n; ++u) ug.offsets[u + 1] += ug.offsets[u];
  return ug;
}

std::vector<long long> ScaledWeights(const std::vector<double>& values, double scale) {
  const double top = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  std::vector<long long> out;
  out.reserve(values.size());
  for (double v : values) {
    out.push_back(static_cast<long long>(std::max(1.0, top > 0 ? std::round(v / top * scale) : 1)));
  }
  return out;
}

sim::Placement PartsToPlacement(const sim::Problem& p, const UnitGraph& ug,
                                const std::vector<int>& part) {
  const auto faster = [&](sim::DeviceId a, sim::DeviceId b) { return ug.speed[a] > ug.speed[b]; };
  PerUnit<sim::DeviceId> device(ug.units.size());
  sim::PerDevice<double> used(p.c().devices().size(), 0);
  for (UnitId u : ug.units.ids()) {
    const Unit& unit = ug.units[u];
    auto d = static_cast<sim::DeviceId>(part[u.index()]);
    if (!unit.devices.empty() &&
        std::find(unit.devices.begin(), unit.devices.end(), d) == unit.devices.end()) {
      d = *std::min_element(unit.devices.begin(), unit.devices.end(), faster);
    }
    device[u] = d;
    used[d] += unit.footprint_bytes;
  }
  for (UnitId u = ug.units.next_id() - 1; u >= UnitId(0); --u) {
    const Unit& unit = ug.units[u];
    const sim::DeviceId d = device[u];
    if (used[d] <= p.c().device(d).memory_bytes) continue;
    std::vector<sim::DeviceId> others = unit.devices;
    std::sort(others.begin(), others.end(), faster);
    for (sim::DeviceId e : others) {
      if (e != d && used[e] + unit.footprint_bytes <= p.c().device(e).memory_bytes) {
        used[d] -= unit.footprint_bytes;
        used[e] += unit.footprint_bytes;
        device[u] = e;
        break;
      }
    }
  }
  sim::Placement placement(p.g().ops().size(), sim::DeviceId(0));
  for (UnitId u : ug.units.ids()) Assign(ug.units[u], device[u], &placement);
  return placement;
}

}  // namespace dplace::place
