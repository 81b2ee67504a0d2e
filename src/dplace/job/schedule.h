// Pipeline schedules as per-rank action orders, and the one simulator that runs them all.
//
// As torch.distributed.pipelining keeps a schedule (its _Action lists), a schedule here is, for
// each pipeline rank, the order of its actions: forward (F), backward (B: the input gradient and,
// unless the schedule splits it off, the weight gradient) and weight gradient (W) of a micro-batch
// on one of the rank's chunks (virtual stages: chunk k of rank i is stage k * ranks + i). Adding a
// schedule is a row of kSchedules and its order builder; SimulateActions runs any of them.
#pragma once

#include <optional>
#include <span>
#include <string_view>
#include <vector>

namespace dplace::job {

enum class Schedule { kOneFOneB, kInterleaved, kGpipe, kZbH1, kZbH2 };

struct ScheduleRow {
  Schedule schedule;
  std::string_view name;
  bool virtual_stages;          // runs several chunks a rank (interleaved)
  bool splits_weight_gradient;  // W apart from B (zero bubble)
  std::string_view what;
};

inline constexpr ScheduleRow kSchedules[] = {
    {Schedule::kOneFOneB, "1f1b", false, false,
     "one forward, one backward (PipeDream-Flush, Megatron-LM's default)"},
    {Schedule::kInterleaved, "interleaved", true, false,
     "Megatron-LM's interleaved 1F1B over virtual stages"},
    {Schedule::kGpipe, "gpipe", false, false, "every forward, then every backward"},
    {Schedule::kZbH1, "zb-h1", false, true,
     "zero bubble H1: 1F1B with weight gradients deferred into the cool-down"},
    {Schedule::kZbH2, "zb-h2", false, true,
     "zero bubble H2: twice 1F1B's warm-up forwards, weight gradients in the gaps; about twice "
     "its activations"},
};

const ScheduleRow& RowOf(Schedule s);
std::optional<Schedule> ScheduleNamed(std::string_view name);

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
