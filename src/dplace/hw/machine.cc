#include "dplace/hw/machine.h"

#include <algorithm>
#include <cstdint>

namespace dplace::hw {

StatusOr<Machine> MachineOf(const Cluster& cluster) {
  Machine m;
  m.name = cluster.name();
  std::vector<DeviceId> accel;
  for (DeviceId d : cluster.device_ids()) {
    if (cluster.device(d).kind == "cpu") continue;
    if (!accel.empty() && cluster.device(d).kind != cluster.device(accel[0]).kind) continue;
    accel.push_back(d);
  }
  if (accel.empty()) return InvalidInput("cluster '" + cluster.name() + "' has no accelerator");
  m.gpu = cluster.device(accel[0]);
  for (DeviceId d : accel) {
    const Device& x = cluster.device(d);
    if (x.memory_bytes != m.gpu.memory_bytes || x.peak_flops != m.gpu.peak_flops ||
        x.peak_flops_half != m.gpu.peak_flops_half) {
      return InvalidInput("cluster '" + cluster.name() +
                          "': the planner needs accelerators of one "
                          "class; " +
                          x.name + " differs from " + m.gpu.name);
    }
  }
  Level level{.name = "links", .size = static_cast<int>(accel.size())};
  level.bandwidth_bytes_per_s = kUnlimited;
  for (DeviceId a : accel) {
    for (DeviceId b : accel) {
      if (a == b) continue;
      const Link& link = cluster.LinkBetween(a, b);
      level.bandwidth_bytes_per_s =
          std::min(level.bandwidth_bytes_per_s, link.bandwidth_bytes_per_s);
      level.latency_s = std::max(level.latency_s, link.latency_s);
    }
  }
  m.levels.push_back(level);
  return m;
}

std::vector<int> GroupSpan(const Machine& m, int stride, int size) {
  std::vector<int> span(m.levels.size(), 1);
  int64_t ranks = 1;   // ranks inside one member of the level above level i
  int64_t before = 1;  // group members inside one member of level i - 1's parent
  for (size_t i = 0; i < m.levels.size(); ++i) {
    ranks *= m.levels[i].size;
    int64_t within = i + 1 == m.levels.size() ? size : std::clamp<int64_t>(ranks / stride, 1, size);
    within = std::max(within, before);
    span[i] = static_cast<int>((within + before - 1) / before);
    before = within;
  }
  return span;
}

}  // namespace dplace::hw
