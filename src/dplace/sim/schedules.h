// Pipeline schedules: one row each (name, what it splits, the order of a stage's tasks, so how
// many micro-batches a stage holds). The pipeline simulator runs them (pipeline_sim.h) by
// StageOrder and WeightAllowance; the throughput objective's memory rule and the exact placers
// count a stage's micro-batches in flight by InFlight. A new schedule of this kind is its row.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dplace/sched/orders.h"

namespace dplace::sim {

enum class PipelineSchedule { kGPipe, k1F1B, kInterleaved, kZBH1, kZBH2 };

struct ScheduleRow {
  PipelineSchedule schedule;
  std::string_view name;
  // Whether backward runs as two tasks: input gradients (I, which the stage before waits for)
  // and weight gradients (W, which nothing else waits for and which fill the bubbles).
  bool splits_backward;
  // Whether each device runs several chunks of the model (virtual stages, round robin:
  // sched::InterleavedOrder).
  bool interleaves;
  // Forwards a stage runs before its first backward, per stage after it (1F1B 1, ZB-H2 2); 0:
  // every forward first, then every backward, the last first (GPipe).
  int warmup_per_stage_after;
  // Weight-gradient tasks a stage lets wait before it runs one ahead of its next task, per stage
  // before it (ZB-H1 1, ZB-H2 2: their memory formulas); 0 where backward is not split.
  int weights_waiting_per_stage_before;
  std::string_view description;
};

// Every schedule, in the order `--schedule` lists them.
std::span<const ScheduleRow> PipelineSchedules();
const ScheduleRow& RowOf(PipelineSchedule schedule);
std::optional<PipelineSchedule> ParsePipelineSchedule(std::string_view name);
std::string_view PipelineScheduleName(PipelineSchedule schedule);
// The names as a message lists them: "gpipe, 1f1b, interleaved, zb-h1 or zb-h2".
std::string PipelineScheduleNames();

// What a stage keeps of a micro-batch between its forward and its backward: everything (none
// recomputed); all but attention's inner tensors, running attention's core again before its
// backward (selective, Megatron-LM's); or only its inputs, running its forward again (full
// recomputation, torch.utils.checkpoint of the whole stage); auto: on the stages that do not fit
// keeping everything, selective, then full where that does not fit either.
enum class Recompute { kNone, kSelective, kFull, kAuto };
std::optional<Recompute> ParseRecompute(std::string_view name);  // none|selective|full|auto
std::string_view RecomputeName(Recompute recompute);

// The order in which a stage (a replica of one) runs its F and B (or I) tasks of micro-batches
// 0..m-1 (its own, numbered from 0) under a schedule that does not interleave: (micro-batch,
// backward?), sched::WarmupOrder's. `depth`: the stages after it, in its own micro-batches (S - 1
// - s without replicas), which set the warm-up forwards. Inference: the forwards. Interleaved
// schedules run sched::InterleavedOrder.
std::vector<std::pair<int, bool>> StageOrder(const ScheduleRow& row, int depth, int m,
                                             bool training);

// Weight-gradient tasks stage `s` lets wait (`s`: the stages before it, in its own micro-batches).
size_t WeightAllowance(const ScheduleRow& row, int s);

// Micro-batches whose activations stage `stage` (from 0) of `stages` holds at once, at most:
// GPipe all `microbatches`; otherwise its warm-up and one more, and the micro-batches whose weight
// gradients may wait, counted in full (an upper bound): 1F1B `stages - stage`, ZB-H1 `stages`,
// ZB-H2 `2 * stages - 1`; never more than `microbatches`. Interleaved: `stage` and `stages` count
// virtual stages (`chunks` a device), and the count is the most of that chunk's micro-batches in
// flight at once in its device's sched::InterleavedOrder (the device's chunks' counts summed bound
// what it holds at once). The simulator counts the exact peak from its timeline.
int InFlight(PipelineSchedule schedule, int stage, int stages, int microbatches, int chunks = 1);

}  // namespace dplace::sim
