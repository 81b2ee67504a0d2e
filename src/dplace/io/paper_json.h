// The JSON formats of Tarnawski et al., NeurIPS 2020 (msr-fiddle/dnn-partitioning): the input graph
// (which also defines the machine: k accelerators + l CPUs) and the split ("fpgas"/"cpus" with node
// lists), read and written. How each field maps onto dplace's model is in docs/formats.md.
#pragma once

#include <memory>

#include "dplace/base/json_node.h"
#include "dplace/graph/graph.h"
#include "dplace/hw/cluster.h"
#include "dplace/io/instance.h"
#include "dplace/sim/evaluation.h"

namespace dplace::io {

// Device kinds of the paper's machine.
inline constexpr const char* kPaperAcceleratorKind = "accel";
inline constexpr const char* kPaperCpuKind = "cpu";

// True when the document looks like the paper's input (has "nodes" and "maxFPGAs").
bool IsPaperInput(const Json& j);
// True when the document looks like the paper's split (has "fpgas" or "cpus").
bool IsPaperSplit(const Json& j);

// Node -> op: name (or the id), fpgaLatency/cpuLatency -> time on accel/cpu, size -> param_bytes,
// isBackwardNode -> kind, colorClass -> co-location group "cc<N>", supportedOnFpga = 0 -> cpu only,
// edge cost -> the source's output transfer time (must be equal on all out-edges, as the paper's
// program requires).
// The machine is "paper-<k>accel-<l>cpu": devices fpga0.. (kind accel) + cpu0.. (kind cpu).
StatusOr<GraphWithMachine> ReadPaperInput(const JsonNode& root, const std::string& name);

// The split's fpgas[i] go to the i-th non-CPU device of the cluster, cpus[j] to the j-th CPU. An op
// the split does not list takes the device of its co-location group (how the paper's program
// extends an inference split to a training graph: backward ops follow their forward ops).
StatusOr<sim::Placement> ReadPaperSplit(const JsonNode& root, const graph::Graph& g,
                                        const hw::Cluster& c);

// The split in the paper's output format, with each device's load and the max-load.
Json WritePaperSplit(const graph::Graph& g, const hw::Cluster& c, const sim::Placement& placement,
                     const sim::Evaluation& evaluation);

// Gives every op of `placement` with no device (-1) the device of a placed member of its
// co-location group. InvalidInput naming the first op that stays unplaced.
Status FillFromGroups(const graph::Graph& g, sim::Placement* placement);

}  // namespace dplace::io
