// The orders in which a pipeline rank runs its forwards and backwards, written once for both
// pipeline simulations: the job planner's per-rank action orders (job/schedule.h) and the op-level
// pipeline (sim/schedules.h, sim/pipeline_sim.h). What a schedule is (its table row, its weight
// gradients, its memory rule) stays with each; how its forwards and backwards are ordered is here.
#pragma once

#include <vector>

namespace dplace::sched {

// One task of a rank: a micro-batch's forward or backward on one of its chunks (0 first).
struct Task {
  int chunk = 0;
  int microbatch = 0;
  bool backward = false;
};

// `warmup` forwards (at most `microbatches`), then one forward and one backward until the
// forwards are done, then the remaining backwards, micro-batches in order (chunk 0): 1F1B
// (PipeDream-Flush) with one warm-up forward per stage after the rank, ZB-H2 with two; with
// `warmup` = `microbatches`, every forward and then every backward (GPipe, as
// torch.distributed.pipelining's ScheduleGPipe runs them).
std::vector<Task> WarmupOrder(int warmup, int microbatches);

// Megatron-LM's interleaved 1F1B (schedules.py, forward_backward_pipelining_with_interleaving) on
// rank `rank` of `ranks` with `chunks` chunks a rank (chunk c of rank r is virtual stage
// c * ranks + r): forward k is micro-batch (k / (ranks * chunks)) * ranks + k % ranks on chunk
// (k / ranks) % chunks, backward k the same on chunk chunks - 1 - (k / ranks) % chunks; the rank
// runs 2 (ranks - rank - 1) + (chunks - 1) ranks warm-up forwards — all of them when
// `microbatches` == `ranks`, as Megatron-LM does — then one forward, one backward, then the
// remaining backwards. `microbatches` a multiple of `ranks` (the callers check).
std::vector<Task> InterleavedOrder(int rank, int ranks, int chunks, int microbatches);

}  // namespace dplace::sched
