// Pipeline schedules as per-rank action orders, and the one simulator that runs them all.
//
// As torch.distributed.pipelining keeps a schedule (its _Action lists), a schedule here is, for
// each pipeline rank, the order of its actions: forward (F), backward (B: the input gradient and,
// unless the schedule splits it off, the weight gradient) and weight gradient (W) of a micro-batch
// on one of the rank's chunks (virtual stages: chunk k of rank i is stage k * ranks + i). Adding a
// schedule is a row of sched/schedules.h (one table for both pipeline simulations) and, where
// its order is new, its order builder; SimulateActions runs any of them.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include "dplace/sched/schedules.h"

namespace dplace::job {

using Schedule = sched::Schedule;
using sched::RowOf;
using sched::ScheduleNamed;
using sched::ScheduleRow;

enum class ActionKind { kForward, kBackward, kWeight };
struct Action {
  ActionKind kind;
  int microbatch;
  int chunk;
};

// Each rank's actions in order (ranks x chunks virtual stages, `microbatches` micro-batches).
// Interleaved needs microbatches a multiple of ranks (as Megatron-LM does); the caller checks.
std::vector<std::vector<Action>> ScheduleActions(Schedule s, int ranks, int chunks,
                                                 int microbatches);

// Per rank, the most chunk-micro-batches whose activations it holds at once (held from F to B,
// or to W where the schedule splits it), in its own order.
std::vector<int> HeldMicrobatches(const std::vector<std::vector<Action>>& actions, bool split);

// Seconds of one micro-batch's forward, backward (input gradient, and weight gradient unless the
// schedule splits it off) and weight gradient on one virtual stage.
struct Work {
  double forward_s = 0, backward_s = 0, weight_s = 0;
  double total() const { return forward_s + backward_s + weight_s; }
};

// Per rank, the time its last action ends. `work[chunk * ranks + rank]` per virtual stage;
// `send_s` the time an activation (or its gradient) takes to reach the next (previous) stage on
// another rank. Each rank runs its actions in order, each as soon as its inputs are there.
std::vector<double> SimulateActions(const std::vector<std::vector<Action>>& actions,
                                    std::span<const Work> work, int ranks, int chunks,
                                    double send_s);

}  // namespace dplace::job
