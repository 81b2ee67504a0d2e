// Pipeline schedules: one row each — its name, whether it runs several chunks a rank or splits the
// backward, how many forwards a stage runs before its first backward, and how many weight
// gradients a stage lets wait. Both pipeline simulations run every schedule from these traits: the
// job planner's per-rank action orders (job/schedule.h) and the op-level pipeline
// (sim/pipeline_sim.h). A new schedule is its row, and an order in orders.h where its order is
// none of these.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace dplace::sched {

enum class Schedule { kGPipe, k1F1B, kInterleaved, kZbH1, kZbH2 };

struct ScheduleRow {
  Schedule schedule;
  std::string_view name;
  // Whether backward runs as two tasks: input gradients (I or B, which the stage before waits for)
  // and weight gradients (W, which nothing else waits for and which fill the bubbles).
  bool splits_backward;
  // Whether each rank runs several chunks of the model (virtual stages, round robin:
  // InterleavedOrder).
  bool interleaves;
  // Forwards a stage runs before its first backward, per stage after it (1F1B 1, ZB-H2 2); 0:
  // every forward first, then every backward (GPipe).
  int warmup_per_stage_after;
  // Weight gradients a stage lets wait before it runs the oldest ahead of its next task, per stage
  // before it (ZB-H1 1, ZB-H2 2: their memory bounds); 0 where backward is not split.
  int weights_waiting_per_stage_before;
  std::string_view description;
};

// Every schedule, in the order `--schedule` lists them.
std::span<const ScheduleRow> Schedules();
const ScheduleRow& RowOf(Schedule schedule);
std::optional<Schedule> ScheduleNamed(std::string_view name);
std::string_view ScheduleName(Schedule schedule);
// The names as a message lists them: "gpipe, 1f1b, interleaved, zb-h1 or zb-h2".
std::string ScheduleNames();

// The forwards a stage with `depth` stages after it runs before its first backward, of `m`.
int WarmupForwards(const ScheduleRow& row, int depth, int m);

}  // namespace dplace::sched
