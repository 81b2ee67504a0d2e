// A machine of nodes as the job planner sees it: one kind of accelerator, levels of links.
//
// Level 0 joins the accelerators of one node (an NVLink/NVSwitch domain: `size` GPUs, each with
// `bandwidth` per direction); level 1 joins the nodes (each GPU's own NIC, `size` nodes). A
// collective's time is worked out from the levels its group spans (cost/collectives.h). The
// op-level placers see the same machine as a Cluster (hw/cluster.h); this value is what planning
// tensor x pipeline x data parallelism needs, and it stays small at thousands of GPUs.
#pragma once

#include <string>
#include <vector>

#include "dplace/hw/cluster.h"

namespace dplace::hw {

struct Level {
  std::string name;  // "nvlink", "infiniband", ...
  int size = 1;      // members at this level: GPUs of a node, then nodes
  double bandwidth_bytes_per_s =
      0;                 // per GPU and direction (a ring's link rate, nccl-tests' busbw)
  double latency_s = 0;  // per hop
};

struct Machine {
  std::string name;
  std::string source;         // where the figures come from (the preset's "source")
  Device gpu;                 // every accelerator is one of these
  std::vector<Level> levels;  // innermost first; at least one

  int gpus_per_node() const { return levels.front().size; }
  int nodes() const { return levels.size() > 1 ? levels[1].size : 1; }
  int num_gpus() const {
    int n = 1;
    for (const Level& l : levels) n *= l.size;
    return n;
  }
};

// The accelerators of a cluster of one node as a Machine: the devices of the first accelerator
// kind (not "cpu"), one level whose bandwidth and latency are the slowest link among them.
// InvalidInput when the cluster has no accelerator or its accelerators differ in memory or peaks.
StatusOr<Machine> MachineOf(const Cluster& cluster);

// How a group of `size` ranks whose members are `stride` ranks apart (Megatron's rank order: TP
// fastest) spreads over the machine's levels: members per level, innermost first (their product is
// `size`). Ranks are numbered node by node.
std::vector<int> GroupSpan(const Machine& m, int stride, int size);

}  // namespace dplace::hw
