// The step simulator's model of a runtime, where real runtimes differ (docs/semantics.md, "Variants
// of the step model"): the order in which a device takes its ops, and how transfers share links.
// The default is dplace's own model: a graph executor (each device runs its ready ops, the first
// ready first), one channel per directed device pair, a transfer holding it for latency + bytes /
// bandwidth. A Problem carries its StepModel; the step
// simulator reads it. Noise in op times and bandwidths is not a model but different numbers:
// variants.h makes problems with them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "dplace/graph/graph.h"
#include "dplace/hw/cluster.h"

namespace dplace::sim {

// Which transfers share a channel (a channel carries one transfer at a time, first come first
// served).
enum class Channels {
  kPerPair,    // one channel per directed pair (source, destination): dplace's default
  kPerDevice,  // one outgoing bus per source device, shared by all its destinations (Placeto's)
};

// What a link's latency holds up.
enum class LatencyMode {
  kGap,      // the channel is held for latency + bytes / bandwidth: dplace's default
  kArrival,  // the channel is held for bytes / bandwidth; the tensor arrives latency after that,
             // while the next transfer on the channel already sends
};

// In which order a device takes its ops.
enum class Issue {
  kReady,         // among its ready ops, the one that became ready first: a graph executor
                  // (dplace.torch.apply, TensorFlow); dplace's default
  kProgramOrder,  // eager PyTorch (a device map run by accelerate): one thread issues the ops in
                  // program order (the graph's topological order, ties by op id); each device
                  // runs its ops in that order, an op waiting for its inputs holds up the ops
                  // after it on its device; ops on CPU devices run on the issuing thread itself,
                  // so no op later in the program starts, on any device, before they end
};

struct StepModel {
  Channels channels = Channels::kPerPair;
  LatencyMode latency = LatencyMode::kGap;
  Issue issue = Issue::kReady;
  bool operator==(const StepModel&) const = default;
};

// "per_pair", "per_device"; "gap", "arrival"; "executor", "eager".
std::string_view ChannelsName(Channels channels);
std::string_view LatencyModeName(LatencyMode latency);
std::string_view IssueName(Issue issue);
// "per_pair,gap" (the default model's name); ",eager" follows for program order.
std::string StepModelName(const StepModel& model);

// How one transfer takes its time: it holds its channel for `occupy_s`, and its tensor arrives
// `then_s` after that.
struct TransferSpan {
  double occupy_s = 0;
  double then_s = 0;
};

// The span of sending `tensor` over `link` under `latency`. Gap: {TransferTime, 0} (bit for bit
// cost::TransferTime). Arrival: {bytes / bandwidth, latency}; a tensor with a measured transfer
// time, and a free 0-byte one, hold the channel for that time and arrive at its end (a measured
// time is what the transfer takes in all; it is not split).
TransferSpan SpanOf(const graph::Tensor& tensor, const hw::Link& link, LatencyMode latency);

}  // namespace dplace::sim
