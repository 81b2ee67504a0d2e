#include "dplace/place/partition/scotch_placer.h"

// clang-format off
#include <cstdint>
#include <cstdio>
#include <scotch.h>
// clang-format on

#include <algorithm>
#include <cmath>
#include <map>

#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// Integer weights for Scotch: `values` scaled so that the largest becomes `scale`, each at least 1.
std::vector<SCOTCH_Num> Scaled(const std::vector<double>& values, double scale) {
  const double top = values.empty() ? 0 : *std::max_element(values.begin(), values.end());
  std::vector<SCOTCH_Num> out;
  out.reserve(values.size());
  for (double v : values) {
    out.push_back(
        static_cast<SCOTCH_Num>(std::max(1.0, top > 0 ? std::round(v / top * scale) : 1)));
  }
  return out;
}

class ScotchPlacer : public Placer {
 public:
  std::string_view name() const override { return "scotch"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const std::vector<Unit> units = MakeUnits(p);
    const int n = static_cast<int>(units.size());
    const int k = p.num_devices();
    std::vector<int> unit_of_op(static_cast<size_t>(p.num_ops()));
    for (int u = 0; u < n; ++u) {
      for (sim::OpId op : units[static_cast<size_t>(u)].ops)
        unit_of_op[static_cast<size_t>(op)] = u;
    }
    // Device speeds relative to one another: total work on the device, inverted.
    std::vector<double> speed(static_cast<size_t>(k));
    for (sim::DeviceId d = 0; d < k; ++d) {
      double total = 0;
      for (sim::OpId op = 0; op < p.num_ops(); ++op) total += p.costs.OpTime(op, d);
      speed[static_cast<size_t>(d)] = total > 0 ? 1 / total : 1;
    }
    const sim::DeviceId fastest =
        static_cast<sim::DeviceId>(std::max_element(speed.begin(), speed.end()) - speed.begin());
    std::vector<double> vertex(static_cast<size_t>(n), 0);
    for (int u = 0; u < n; ++u) {
      for (sim::OpId op : units[static_cast<size_t>(u)].ops) {
        vertex[static_cast<size_t>(u)] += p.costs.OpTime(op, fastest);
      }
    }
    std::map<std::pair<int, int>, double> edge_cost;  // both directions
    const sim::DeviceId other = k > 1 ? (fastest == 0 ? 1 : 0) : fastest;
    for (graph::TensorId t = 0; t < p.g().num_tensors(); ++t) {
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
    std::vector<SCOTCH_Num> verttab(static_cast<size_t>(n) + 1, 0), edgetab;
    std::vector<double> edge_values;
    for (const auto& [ends, cost] : edge_cost) {
      ++verttab[static_cast<size_t>(ends.first) + 1];
      edgetab.push_back(ends.second);
      edge_values.push_back(cost);
    }
    for (int u = 0; u < n; ++u)
      verttab[static_cast<size_t>(u) + 1] += verttab[static_cast<size_t>(u)];
    std::vector<SCOTCH_Num> velotab = Scaled(vertex, 1e6);
    std::vector<SCOTCH_Num> edlotab = Scaled(edge_values, 1e6);
    std::vector<SCOTCH_Num> arch_weights = Scaled(speed, 1000);
    std::vector<SCOTCH_Num> parttab(static_cast<size_t>(n), 0);

    SCOTCH_Graph graph;
    SCOTCH_Arch arch;
    SCOTCH_Strat strat;
    if (SCOTCH_graphInit(&graph) != 0) return Internal("scotch: graph init failed");
    SCOTCH_archInit(&arch);
    SCOTCH_stratInit(&strat);
    SCOTCH_randomReset();
    SCOTCH_randomSeed(static_cast<SCOTCH_Num>(ctx.seed % 2147483647));
    int rc =
        SCOTCH_graphBuild(&graph, 0, n, verttab.data(), verttab.data() + 1, velotab.data(), nullptr,
                          static_cast<SCOTCH_Num>(edgetab.size()), edgetab.data(), edlotab.data());
    if (rc == 0) rc = SCOTCH_archCmpltw(&arch, k, arch_weights.data());
    if (rc == 0) rc = SCOTCH_stratGraphMapBuild(&strat, SCOTCH_STRATQUALITY, k, 0.05);
    if (rc == 0 && n > 0) rc = SCOTCH_graphMap(&graph, &arch, &strat, parttab.data());
    SCOTCH_stratExit(&strat);
    SCOTCH_archExit(&arch);
    SCOTCH_graphExit(&graph);
    if (rc != 0) return Internal("scotch: mapping failed (code " + std::to_string(rc) + ")");

    sim::Placement placement(static_cast<size_t>(p.num_ops()), 0);
    for (int u = 0; u < n; ++u) {
      const Unit& unit = units[static_cast<size_t>(u)];
      auto d = static_cast<sim::DeviceId>(parttab[static_cast<size_t>(u)]);
      if (std::find(unit.devices.begin(), unit.devices.end(), d) == unit.devices.end() &&
          !unit.devices.empty()) {
        d = *std::min_element(
            unit.devices.begin(), unit.devices.end(), [&](sim::DeviceId a, sim::DeviceId b) {
              return speed[static_cast<size_t>(a)] > speed[static_cast<size_t>(b)];
            });
      }
      Assign(unit, d, &placement);
    }
    return placement;
  }
};

}  // namespace

std::unique_ptr<Placer> MakeScotchPlacer() { return std::make_unique<ScotchPlacer>(); }

}  // namespace dplace::place
