// Pipeline schedules: one row each (name, what it splits, how many micro-batches a stage holds).
// The pipeline simulator runs them (pipeline_sim.h); the throughput objective's memory rule and
// the exact placers count a stage's micro-batches in flight by InFlight.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dplace::sim {

enum class PipelineSchedule { kGPipe, k1F1B, kInterleaved, kZBH1, kZBH2 };

struct ScheduleRow {
  PipelineSchedule schedule;
  std::string_view name;
  // Whether backward runs as two tasks: input gradients (I, which the stage before waits for)
  // and weight gradients (W, which nothing else waits for and which fill the bubbles).
  bool splits_backward;
  // Whether each device runs several chunks of the model (virtual stages, round robin).
  bool interleaves;
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

// One task of a device under interleaved 1F1B: which of its chunks (0 first), which micro-batch,
// forward or backward.
struct ChunkTask {
  int chunk;
  int microbatch;
  bool backward;
};

// The order in which device `rank` (from 0) of `stages` runs its `chunks` chunks' tasks under
// interleaved 1F1B (Megatron-LM's): forwards go through the micro-batches in groups of `stages`,
// each group through chunk 0, 1, ..., backwards likewise from the last chunk; the device runs
// 2(stages - rank - 1) + (chunks - 1) stages warm-up forwards (all of them when microbatches ==
// stages), then one forward, one backward, then the remaining backwards. Chunk c of device r is
// the pipeline's virtual stage c * stages + r. `microbatches` must be a multiple of `stages`.
std::vector<ChunkTask> InterleavedOrder(int rank, int stages, int chunks, int microbatches);

// Micro-batches whose activations stage `stage` (from 0) of `stages` holds at once, at most:
// GPipe all `microbatches`; 1F1B `stages - stage` (its warm-up); ZB-H1 `stages` (1F1B's, and up
// to `stage` more whose weight gradients wait, counted in full: an upper bound); ZB-H2
// `2 * stages - 1` (its deeper warm-up, likewise); never more than `microbatches` for the
// zero-bubble ones. Interleaved: `stage` and `stages` count virtual stages (`chunks` a device),
// and the count is the most of that chunk's micro-batches in flight at once in its device's
// InterleavedOrder (the device's chunks' counts summed bound what it holds at once). The
// simulator counts the exact peak from its timeline.
int InFlight(PipelineSchedule schedule, int stage, int stages, int microbatches, int chunks = 1);

}  // namespace dplace::sim
