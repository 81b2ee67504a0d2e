// Importers for layer-level profiles of real training runs:
//   PipeDream's profiler output (graph.txt): per layer forward/backward time (ms), activation and
//   parameter bytes, and the layer DAG. The training graph is forward + backward layers: "<node>"
//   and
//   "<node>_grad", co-located; backward edges reversed; times in seconds on device kind "gpu" (the
//   only kind measured, so the ops may only run on GPUs).
//   Piper's input JSON (NeurIPS 2021): the "vanilla" option at tensor-parallel degree 1 of each
//   layer; it also defines the machine (maxDevices GPUs of maxMemoryPerDevice, links of
//   `bandwidth`).
//   Baechi's (SoCC 2020) TensorFlow op-level profile decoded to JSON (nodes with compute_time_us
//   per device kind, output bytes per output slot, temporary and persistent memory, "loc:@x"
//   co-location; edges src/dst/src_output_slot/control). Ops run only on the measured kinds;
//   unmeasured ops (constants, identities) take no time; persistent memory is resident, temporary
//   memory is scratch. The file's own TensorFlow device assignment is not read.
#pragma once

#include <string>
#include <string_view>

#include "dplace/base/json_node.h"
#include "dplace/graph/graph.h"
#include "dplace/hw/cluster.h"
#include "dplace/io/instance.h"
#include "dplace/job/piper.h"

namespace dplace::io {

// True when the text looks like a PipeDream graph.txt (first line "nodeN -- ... -- ...").
bool IsPipeDreamProfile(std::string_view text);
// Errors: "line L: <problem>".
StatusOr<graph::Graph> ReadPipeDreamProfile(std::string_view text, const std::string& name);

bool IsPiperInput(const Json& j);
// Piper's input with every option of every layer, for Piper's DP (job/piper.h): layers renumbered
// by position, each option's sync bytes aligned with the layer's edges. InvalidInput where a sync
// map's keys are not the layer's neighbours, an option has a negative size, or the graph has a
// cycle.
StatusOr<job::PiperInstance> ReadPiperInstance(const JsonNode& root);
StatusOr<GraphWithMachine> ReadPiperInput(const JsonNode& root, const std::string& name);

// True for a JSON object with "nodes" and "edges" whose first node has "compute_time_us".
bool IsBaechiProfile(const Json& j);
StatusOr<graph::Graph> ReadBaechiProfile(const JsonNode& root, const std::string& name);

}  // namespace dplace::io
