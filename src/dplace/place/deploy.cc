#include "dplace/place/deploy.h"

#include <algorithm>
#include <set>

#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// Work: FLOPs, or a measured time (profiles give times, not FLOPs). An op without (Identity, Shape,
// Reshape, a weight's pass-through) never decides a device, even when it holds a parameter (which
// then moves with it).
bool DoesWork(const graph::Op& op) {
  if (op.flops > 0) return true;
  for (const auto& [kind, seconds] : op.time_s) {
    if (seconds > 0) return true;
  }
  return false;
}

}  // namespace

sim::Placement FollowNeighbours(const sim::Problem& p, const sim::Placement& placement) {
  const graph::Graph& g = p.g();
  sim::Placement out = placement;
  for (const Unit& unit : MakeUnits(p)) {
    if (std::any_of(unit.ops.begin(), unit.ops.end(),
                    [&](sim::OpId op) { return DoesWork(g.op(op)); })) {
      continue;
    }
    const std::set<sim::OpId> members(unit.ops.begin(), unit.ops.end());
    sim::DeviceId target = -1;
    for (sim::OpId op : unit.ops) {  // the first producer outside the unit
      for (sim::OpId pred : g.Predecessors(op)) {
        if (!members.count(pred)) {
          target = out[static_cast<size_t>(pred)];
          break;
        }
      }
      if (target >= 0) break;
    }
    for (size_t i = 0; target < 0 && i < unit.ops.size(); ++i) {  // else the first consumer
      for (sim::OpId succ : g.Successors(unit.ops[i])) {
        if (!members.count(succ)) {
          target = out[static_cast<size_t>(succ)];
          break;
        }
      }
    }
    if (target < 0 || std::find(unit.devices.begin(), unit.devices.end(), target) ==
                          unit.devices.end()) {
      continue;
    }
    Assign(unit, target, &out);
  }
  return out;
}

int DevicesUsed(const sim::Problem& p, const sim::Placement& placement) {
  std::set<sim::DeviceId> used;
  for (sim::OpId op = 0; op < p.num_ops(); ++op) {
    if (DoesWork(p.g().op(op))) used.insert(placement[static_cast<size_t>(op)]);
  }
  return static_cast<int>(used.size());
}

double BytesCrossing(const sim::Problem& p, const sim::Placement& placement) {
  const graph::Graph& g = p.g();
  double bytes = 0;
  std::set<sim::DeviceId> sent;
  for (graph::TensorId t = 0; t < g.num_tensors(); ++t) {
    const sim::DeviceId src = placement[static_cast<size_t>(g.tensor(t).producer)];
    sent.clear();
    for (sim::OpId c : g.Consumers(t)) {
      const sim::DeviceId dst = placement[static_cast<size_t>(c)];
      if (dst != src && sent.insert(dst).second) bytes += g.tensor(t).bytes;
    }
  }
  return bytes;
}

}  // namespace dplace::place
