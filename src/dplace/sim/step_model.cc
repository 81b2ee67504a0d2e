#include "dplace/sim/step_model.h"

#include "dplace/cost/cost_model.h"

namespace dplace::sim {

std::string_view ChannelsName(Channels channels) {
  return channels == Channels::kPerDevice ? "per_device" : "per_pair";
}

std::string_view LatencyModeName(LatencyMode latency) {
  return latency == LatencyMode::kArrival ? "arrival" : "gap";
}

std::string_view IssueName(Issue issue) {
  return issue == Issue::kProgramOrder ? "eager" : "executor";
}

std::string StepModelName(const StepModel& model) {
  return std::string(ChannelsName(model.channels)) + "," +
         std::string(LatencyModeName(model.latency)) +
         (model.issue == Issue::kProgramOrder ? ",eager" : "");
}

TransferSpan SpanOf(const graph::Tensor& tensor, const hw::Link& link, LatencyMode latency) {
  const double total = cost::TransferTime(tensor, link);
  if (latency == LatencyMode::kGap || tensor.transfer_time_s >= 0 || total == 0) {
    return {total, 0};
  }
  return {tensor.bytes / link.bandwidth_bytes_per_s, link.latency_s};
}

}  // namespace dplace::sim
