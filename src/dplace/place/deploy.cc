#include "dplace/place/deploy.h"

#include <algorithm>
#include <set>

#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// Which ops do work worth a device: those whose fastest time is above a hundred-thousandth of the
// graph's total (shape arithmetic, Identity, Reshape and a weight's pass-through are not). Such an
// op never decides a device, even when it holds a parameter (which then moves with it).
sim::PerOp<char> Working(const sim::Problem& p) {
  auto allowed = [&p](sim::OpId op, sim::DeviceId d) { return p.Allowed(op, d); };
  sim::PerOp<double> fastest(p.g().ops().size());
  double total = 0;
  for (sim::OpId op : p.g().op_ids()) {
    fastest[op] = p.costs.MinOpTime(op, p.num_devices(), allowed);
    total += fastest[op];
  }
  sim::PerOp<char> working(fastest.size());
  for (sim::OpId op : fastest.ids()) working[op] = fastest[op] > 1e-5 * total;
  return working;
}

}  // namespace

sim::Placement FollowNeighbours(const sim::Problem& p, const sim::Placement& placement) {
  const graph::Graph& g = p.g();
  const sim::PerOp<char> working = Working(p);
  sim::Placement out = placement;
  // The device of the nearest op that does work, looking through ops that do not: breadth-first
  // over producers (`up`) or consumers, in id order; -1 when there is none.
  auto nearest = [&](const std::vector<sim::OpId>& from, bool up) -> sim::DeviceId {
    std::vector<sim::OpId> frontier = from;
    std::set<sim::OpId> seen(from.begin(), from.end());
    while (!frontier.empty()) {
      std::vector<sim::OpId> next;
      for (sim::OpId op : frontier) {
        for (sim::OpId n : up ? g.Predecessors(op) : g.Successors(op)) {
          if (!seen.insert(n).second) continue;
          if (working[n]) return out[n];
          next.push_back(n);
        }
      }
      frontier = std::move(next);
    }
    return sim::DeviceId(-1);
  };
  for (const Unit& unit : MakeUnits(p)) {
    if (std::any_of(unit.ops.begin(), unit.ops.end(),
                    [&](sim::OpId op) { return working[op] != 0; })) {
      continue;
    }
    sim::DeviceId target = nearest(unit.ops, /*up=*/true);
    if (target < 0) target = nearest(unit.ops, /*up=*/false);
    if (target < 0 ||
        std::find(unit.devices.begin(), unit.devices.end(), target) == unit.devices.end()) {
      continue;
    }
    Assign(unit, target, &out);
  }
  return out;
}

int DevicesUsed(const sim::Problem& p, const sim::Placement& placement) {
  const sim::PerOp<char> working = Working(p);
  std::set<sim::DeviceId> used;
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    if (working[op]) used.insert(placement[op]);
  }
  return static_cast<int>(used.size());
}

double BytesCrossing(const sim::Problem& p, const sim::Placement& placement) {
  const graph::Graph& g = p.g();
  double bytes = 0;
  std::set<sim::DeviceId> sent;
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    const sim::DeviceId src = placement[g.tensor(t).producer];
    sent.clear();
    for (sim::OpId c : g.Consumers(t)) {
      const sim::DeviceId dst = placement[c];
      if (dst != src && sent.insert(dst).second) bytes += g.tensor(t).bytes;
    }
  }
  return bytes;
}

}  // namespace dplace::place
