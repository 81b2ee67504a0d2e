#include "dplace/sim/constraints.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "dplace/base/units.h"
#include "dplace/sim/pipeline_sim.h"

namespace dplace::sim {

Status CheckShape(const Problem& p, const Placement& placement) {
  if (static_cast<int>(placement.size()) != p.num_ops()) {
    return InvalidInput("placement has " + std::to_string(placement.size()) + " entries for " +
                        std::to_string(p.num_ops()) + " ops");
  }
  for (graph::OpId i : placement.ids()) {
    if (placement[i] < 0 || placement[i] >= p.num_devices()) {
      return InvalidInput("op '" + p.g().op(i).name + "' is not placed on a device");
    }
  }
  return OkStatus();
}

std::string FindViolation(const Problem& p, const Placement& placement) {
  if (!p.infeasible_reason.empty()) return p.infeasible_reason;
  const graph::Graph& g = p.g();
  for (OpId i{0}; i < p.num_ops(); ++i) {
    const DeviceId d = placement[i];
    if (!p.Allowed(i, d)) {
      const hw::Device& dev = p.c().device(d);
      return "op '" + g.op(i).name + "' may not run on " + dev.name + " (kind " + dev.kind + ")";
    }
  }
  for (graph::GroupId grp : g.group_ids()) {
    auto members = g.GroupMembers(grp);
    if (members.empty()) continue;
    const DeviceId first = placement[members[0]];
    for (OpId op : members) {
      const DeviceId d = placement[op];
      if (d != first) {
        return "co-location group '" + g.groups()[grp] + "' is split over " +
               p.c().device(first).name + " and " + p.c().device(d).name;
      }
    }
  }
  return p.mapped_modules ? FindMapViolation(p, placement) : "";
}

std::string FindMapViolation(const Problem& p, const Placement& placement) {
  const graph::Graph& g = p.g();
  for (const MappedModules::Module& m : p.mapped_modules->modules) {
    if (m.ops.empty()) continue;
    const DeviceId first = placement[m.ops.front()];
    const auto other =
        std::find_if(m.ops.begin(), m.ops.end(), [&](OpId op) { return placement[op] != first; });
    if (other == m.ops.end()) continue;  // mapped whole
    const std::string name = m.path.empty() ? "the model's own ops" : "module '" + m.path + "'";
    if (m.leaf) {
      return name + " is split over " + p.c().device(first).name + " and " +
             p.c().device(placement[*other]).name +
             ": a device map runs a module with its parameters on one device";
    }
    for (OpId op : m.own) {
      for (graph::TensorId t : g.Inputs(op)) {
        const OpId producer = g.tensor(t).producer;
        if (placement[producer] == placement[op]) continue;
        return "op '" + g.op(op).name + "' of " + name + " (split over devices) reads '" +
               g.op(producer).name + "' from " + p.c().device(placement[producer]).name + " on " +
               p.c().device(placement[op]).name +
               ": a device map moves tensors only into a module mapped whole";
      }
    }
  }
  return "";
}

std::string FindMemoryViolation(const Problem& p, const PerDevice<DeviceReport>& devices) {
  for (DeviceId d : p.c().device_ids()) {
    const DeviceReport& r = devices[d];
    if (r.peak_memory_bytes > r.memory_capacity_bytes) {
      return "device " + p.c().device(d).name + ": peak memory " +
             FormatBytes(r.peak_memory_bytes) + " exceeds capacity " +
             FormatBytes(r.memory_capacity_bytes) + " by " +
             FormatBytes(r.peak_memory_bytes - r.memory_capacity_bytes);
    }
  }
  return "";
}

double OpFootprintBytes(const graph::Graph& g, OpId op) {
  const graph::Op& o = g.op(op);
  double bytes = o.param_bytes + o.scratch_bytes;
  for (int32_t k = 0; k < o.num_outputs; ++k) bytes += g.tensor(o.first_output + k).bytes;
  return bytes;
}

double OpResidentBytes(const graph::Graph& g, OpId op) {
  return g.op(op).param_bytes + g.op(op).scratch_bytes;
}

PerOp<double> HeldBytesPerOp(const graph::Graph& g) {
  PerOp<double> held(g.ops().size(), 0);
  std::vector<char> kept(static_cast<size_t>(g.num_tensors()), 0);
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    if (g.op(g.tensor(t).producer).kind != graph::OpKind::kForward) continue;
    bool by_backward = false;
    for (OpId c : g.Consumers(t))
      by_backward = by_backward || g.op(c).kind != graph::OpKind::kForward;
    if (!by_backward) continue;
    const graph::TensorId root = g.StorageOf(t);
    if (root < 0 || kept[static_cast<size_t>(root.index())]) continue;
    kept[static_cast<size_t>(root.index())] = 1;
    held[g.tensor(root).producer] += g.tensor(root).bytes;
  }
  return held;
}

PerDevice<double> StageMemoryBytes(const Problem& p, const Placement& placement,
                                   const PerOp<double>& footprint, const PerOp<double>& resident) {
  PerDevice<double> memory(p.c().devices().size(), 0);
  if (p.stage_memory == Problem::StageMemory::kOpSizes) {
    for (OpId op{0}; op < p.num_ops(); ++op) memory[placement[op]] += footprint[op];
    return memory;
  }
  const PerDevice<double> held = HeldPerMicrobatch(p, placement);
  PerDevice<int> position(p.c().devices().size(), -1);
  int stages = 0;
  for (OpId op : p.g().TopologicalOrder()) {
    const DeviceId d = placement[op];
    memory[d] += resident[op];
    if (position[d] < 0 && p.g().op(op).kind == graph::OpKind::kForward) position[d] = stages++;
  }
  // What a device keeps per micro-batch in flight, and of the one whose backward runs, by what it
  // recomputes (as the pipeline simulator counts them); auto: the least.
  const bool full = p.recompute == Recompute::kFull || p.recompute == Recompute::kAuto;
  const bool selective = p.recompute == Recompute::kSelective || p.recompute == Recompute::kAuto;
  const PerDevice<double> inputs =
      full ? HeldWhenRecomputing(p, placement) : PerDevice<double>(held.size(), 0);
  const PerDevice<double> core =
      selective ? HeldSelectivePerMicrobatch(p, placement) : PerDevice<double>(held.size(), 0);
  for (DeviceId d : p.c().device_ids()) {
    if (position[d] < 0) continue;
    const int in_flight = InFlight(p, position[d], stages);
    double least = p.recompute == Recompute::kNone || p.recompute == Recompute::kAuto
                       ? in_flight * held[d]
                       : std::numeric_limits<double>::infinity();
    if (full) least = std::min(least, in_flight * inputs[d] + held[d]);
    if (selective) least = std::min(least, in_flight * core[d] + held[d] - core[d]);
    memory[d] += least;
  }
  return memory;
}

}  // namespace dplace::sim
