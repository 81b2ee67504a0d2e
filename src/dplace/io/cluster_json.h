// The dplace machine format, "dplace-cluster/1" (docs/formats.md), and the bundled presets
// (clusters/*.json, compiled into the binary so `--cluster k80x4` works from anywhere).
#pragma once

#include <string>
#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/hw/cluster.h"
#include "dplace/hw/machine.h"

namespace dplace::io {

// Builds a cluster from a parsed dplace-cluster/1 document. A device entry with "count": N expands
// to name0..name(N-1); links give "between": [a, b] or "group": [...]; sizes and rates take units.
// With "nodes" (or `nodes` > 0, which overrides it) above 1: the accelerators of every node,
// gpu0 .. gpuN-1 node by node, linked by the "levels" (inside a node, between nodes).
StatusOr<hw::Cluster> ReadCluster(const JsonNode& root, int nodes = 0);

// The machine as the job planner sees it (hw/machine.h): the accelerators of one node, the file's
// "levels" (or one level: the slowest link among its accelerators), `nodes` nodes (0: the file's
// "nodes", default 1). InvalidInput for nodes without a level between them.
StatusOr<hw::Machine> ReadMachine(const JsonNode& root, int nodes = 0);

// Names of the bundled presets, sorted.
std::vector<std::string> PresetNames();
// The JSON text of a bundled preset, or NotFound.
StatusOr<std::string> PresetText(const std::string& name);

}  // namespace dplace::io
