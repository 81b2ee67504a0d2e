// The step simulator's model of transfers, where real runtimes differ (docs/semantics.md, "Variants
// of the step model"). The default is dplace's own model: one channel per directed device pair, a
// transfer holding it for latency + bytes / bandwidth. A Problem carries its StepModel; the step
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

struct StepModel {
  Channels channels = Channels::kPerPair;
  LatencyMode latency = LatencyMode::kGap;
  bool operator==(const StepModel&) const = default;
};

// "per_pair", "per_device"; "gap", "arrival".
std::string_view ChannelsName(Channels channels);
std::string_view LatencyModeName(LatencyMode latency);
// "per_pair,gap" (the default model's name).
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
