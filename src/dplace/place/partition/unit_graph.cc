#include "dplace/place/partition/unit_graph.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "dplace/cost/cost_model.h"

namespace dplace::place {

UnitGraph MakeUnitGraph(const sim::Problem& p) {
  UnitGraph ug;
  ug.units = MakeUnits(p);
  const int n = static_cast<int>(ug.units.size());
  const int k = p.num_devices();
  std::vector<int> unit_of_op(static_cast<size_t>(p.num_ops()));
  for (int u = 0; u < n; ++u) {
    for (sim::OpId op : ug.units[static_cast<size_t>(u)].ops)
      unit_of_op[static_cast<size_t>(op)] = u;
  }
  ug.speed.assign(static_cast<size_t>(k), 1);
  for (sim::DeviceId d{0}; d < k; ++d) {
    double total = 0;
    for (sim::OpId op{0}; op < p.num_ops(); ++op) total += p.costs.OpTime(op, d);
    ug.speed[static_cast<size_t>(d)] = total > 0 ? 1 / total : 1;
  }
  const auto fastest = static_cast<sim::DeviceId>(
      std::max_element(ug.speed.begin(), ug.speed.end()) - ug.speed.begin());
  ug.vertex_s.assign(static_cast<size_t>(n), 0);
  for (int u = 0; u < n; ++u) {
    for (sim::OpId op : ug.units[static_cast<size_t>(u)].ops) {
      ug.vertex_s[static_cast<size_t>(u)] += p.costs.OpTime(op, fastest);
    }
  }
  std::map<std::pair<int, int>, double> edge_cost;  // both directions
  const sim::DeviceId other = k > 1 ? sim::DeviceId(fastest == 0 ? 1 : 0) : fastest;
  for (graph::TensorId t{0}; t < p.g().num_tensors(); ++t) {
    const int from = unit_of_op[static_cast<size_t>(p.g().tensor(t).producer)];
    const double cost =
        other == fastest ? 0
                         : cost::TransferTime(p.g().tensor(t), p.c().LinkBetween(fastest, other));
    std::vector<int> seen;
    for (sim::OpId c : p.g().Consumers(t)) {
      const int to = unit_of_op[static_cast<size_t>(c)];
      if (to == from || std::find(seen.begin(), seen.end(), to) != seen.end()) continue;
      seen.push_back(to);
      edge_cost[{from, to}] += cost;
      edge_cost[{to, from}] += cost;
    }
  }
  ug.offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (const auto& [ends, cost] : edge_cost) {
    ++ug.offsets[static_cast<size_t>(ends.first) + 1];
    ug.neighbours.push_back(ends.second);
    ug.edge_s.push_back(cost);
  }
  for (int u = 0; u < n; ++u)
    ug.offsets[static_cast<size_t>(u) + 1] += ug.offsets[static_cast<size_t>(u)];
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
  const auto faster = [&](sim::DeviceId a, sim::DeviceId b) {
    return ug.speed[static_cast<size_t>(a)] > ug.speed[static_cast<size_t>(b)];
  };
  const size_t n = ug.units.size();
  std::vector<sim::DeviceId> device(n);
  std::vector<double> used(static_cast<size_t>(p.num_devices()), 0);
  for (size_t u = 0; u < n; ++u) {
    const Unit& unit = ug.units[u];
    auto d = static_cast<sim::DeviceId>(part[u]);
    if (!unit.devices.empty() &&
        std::find(unit.devices.begin(), unit.devices.end(), d) == unit.devices.end()) {
      d = *std::min_element(unit.devices.begin(), unit.devices.end(), faster);
    }
    device[u] = d;
    used[static_cast<size_t>(d)] += unit.footprint_bytes;
  }
  for (size_t u = n; u-- > 0;) {
    const Unit& unit = ug.units[u];
    const sim::DeviceId d = device[u];
    if (used[static_cast<size_t>(d)] <= p.c().device(d).memory_bytes) continue;
    std::vector<sim::DeviceId> others = unit.devices;
    std::sort(others.begin(), others.end(), faster);
    for (sim::DeviceId e : others) {
      if (e != d &&
          used[static_cast<size_t>(e)] + unit.footprint_bytes <= p.c().device(e).memory_bytes) {
        used[static_cast<size_t>(d)] -= unit.footprint_bytes;
        used[static_cast<size_t>(e)] += unit.footprint_bytes;
        device[u] = e;
        break;
      }
    }
  }
  sim::Placement placement(static_cast<size_t>(p.num_ops()), sim::DeviceId(0));
  for (size_t u = 0; u < n; ++u) Assign(ug.units[u], device[u], &placement);
  return placement;
}

}  // namespace dplace::place
