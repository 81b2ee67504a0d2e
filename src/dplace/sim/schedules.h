// Pipeline schedules as the op-level pipeline runs them: the rows are sched/schedules.h's, one
// table for both pipeline simulations. The pipeline simulator runs them (pipeline_sim.h) by
// StageOrder and WeightAllowance; the throughput objective's memory rule and the exact placers
// count a stage's micro-batches in flight by InFlight.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dplace/sched/orders.h"
#include "dplace/sched/schedules.h"

namespace dplace::sim {

using PipelineSchedule = sched::Schedule;
using sched::RowOf;
using sched::ScheduleRow;

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
