// The dplace machine format, "dplace-cluster/1" (docs/formats.md), and the bundled presets
// (clusters/*.json, compiled into the binary so `--cluster k80x4` works from anywhere).
#pragma once

#include <string>
#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/hw/cluster.h"

namespace dplace::io {

// Builds a cluster from a parsed dplace-cluster/1 document. A device entry with "count": N expands
// to name0..name(N-1); links give "between": [a, b] or "group": [...]; sizes and rates take units.
StatusOr<hw::Cluster> ReadCluster(const JsonNode& root);

// Names of the bundled presets, sorted.
std::vector<std::string> PresetNames();
// The JSON text of a bundled preset, or NotFound.
StatusOr<std::string> PresetText(const std::string& name);

}  // namespace dplace::io
