#include "dplace/sim/constraints.h"

#include <vector>

#include "dplace/base/units.h"

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

}  // namespace dplace::sim
