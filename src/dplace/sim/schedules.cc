#include "dplace/sim/schedules.h"

#include <algorithm>

namespace dplace::sim {

std::optional<Recompute> ParseRecompute(std::string_view name) {
  if (name == "none") return Recompute::kNone;
  if (name == "selective") return Recompute::kSelective;
  if (name == "full") return Recompute::kFull;
  if (name == "auto") return Recompute::kAuto;
  return std::nullopt;
}

std::string_view RecomputeName(Recompute recompute) {
  return recompute == Recompute::kNone        ? "none"
         : recompute == Recompute::kSelective ? "selective"
         : recompute == Recompute::kFull      ? "full"
                                              : "auto";
}

std::vector<std::pair<int, bool>> StageOrder(const ScheduleRow& row, int depth, int m,
                                             bool training) {
  std::vector<std::pair<int, bool>> order;
  if (!training) {
    for (int i = 0; i < m; ++i) order.emplace_back(i, false);
    return order;
  }
  for (const sched::Task& t : sched::WarmupOrder(sched::WarmupForwards(row, depth, m), m))
    order.emplace_back(t.microbatch, t.backward);
  return order;
}

size_t WeightAllowance(const ScheduleRow& row, int s) {
  return static_cast<size_t>(row.weights_waiting_per_stage_before) * static_cast<size_t>(s);
}

int InFlight(PipelineSchedule schedule, int stage, int stages, int microbatches, int chunks) {
  const ScheduleRow& row = RowOf(schedule);
  if (row.interleaves) {
    const int devices = std::max(1, stages / std::max(1, chunks));
    const int chunk = stage / devices;
    int now = 0, most = 0;
    for (const sched::Task& t :
         sched::InterleavedOrder(stage % devices, devices, chunks, microbatches)) {
      if (t.chunk != chunk) continue;
      now += t.backward ? -1 : 1;
      most = std::max(most, now);
    }
    return most;
  }
  if (row.warmup_per_stage_after == 0) return microbatches;
  return std::min(microbatches, row.warmup_per_stage_after * (stages - stage - 1) + 1 +
                                    row.weights_waiting_per_stage_before * stage);
}

}  // namespace dplace::sim
