// Pipeline-schedule simulation of a stage split: M micro-batches flow through the stages (the
// devices that hold ops, ordered by their first forward op) under GPipe or 1F1B (PipeDream-Flush).
//  - A stage's forward task F(m) runs its forward ops of micro-batch m; B(m) its backward and
//  update
//    ops (absent for inference graphs). Op times are per micro-batch, as the graph gives them.
//  - Each stage runs its tasks in the schedule's order: GPipe F(0..M-1) then B(M-1..0); 1F1B
//    min(S-1-s, M) warm-up forwards, then one forward / one backward, then the remaining backwards.
//  - A task waits for every task whose tensors it consumes, plus their transfer time (the sum of
//  the
//    crossing tensors' transfer costs between the two stages); transfers do not contend.
//  - Memory per stage: parameters + scratch, plus the stage's forward activations (output bytes of
//  its
//    forward ops) for every micro-batch between the start of F(m) and the end of B(m) (for
//    inference, the end of F(m)).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/evaluation.h"

namespace dplace::sim {

enum class PipelineSchedule { kGPipe, k1F1B };
std::optional<PipelineSchedule> ParsePipelineSchedule(std::string_view name);
std::string_view PipelineScheduleName(PipelineSchedule schedule);

struct PipelineTask {
  DeviceId device;
  int microbatch;
  bool backward;
  double start_s, end_s;
};

struct PipelineStage {
  DeviceId device;
  double forward_s = 0, backward_s = 0;  // per micro-batch
  double busy_s = 0;
  int peak_in_flight = 0;  // micro-batches whose activations were held at once
  double peak_memory_bytes = 0;
  double memory_capacity_bytes = 0;
};

struct PipelineResult {
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  int microbatches = 0;
  double makespan_s = 0;
  double time_per_sample_s = 0;  // makespan / micro-batches
  double bubble_fraction = 0;    // 1 - Σ busy / (stages × makespan)
  bool feasible = true;
  std::string reason;  // memory overflow, when infeasible
  std::vector<PipelineStage> stages;
  std::vector<PipelineTask> tasks;  // in start order
};

// InvalidInput when microbatches < 1. The placement must pass CheckShape.
StatusOr<PipelineResult> SimulatePipeline(const Problem& problem, const Placement& placement,
                                          PipelineSchedule schedule, int microbatches);

}  // namespace dplace::sim
