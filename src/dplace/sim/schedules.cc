#include "dplace/sim/schedules.h"

#include <algorithm>
#include <array>

namespace dplace::sim {
namespace {

constexpr std::array<ScheduleRow, 5> kSchedules = {{
    {PipelineSchedule::kGPipe, "gpipe", false, false, 0, 0,
     "every forward, then every backward (GPipe): holds all micro-batches"},
    {PipelineSchedule::k1F1B, "1f1b", false, false, 1, 0,
     "stages - s warm-up forwards, then one forward, one backward (PipeDream-Flush)"},
    {PipelineSchedule::kInterleaved, "interleaved", false, true, 1, 0,
     "V chunks a device, round robin, 1F1B over them (Megatron-LM's interleaved schedule): "
     "bubble (S-1)/(VM+S-1); micro-batches a multiple of the stages"},
    {PipelineSchedule::kZBH1, "zb-h1", true, false, 1, 1,
     "1F1B's forwards and input gradients; weight gradients fill the bubbles (ZB-H1, Qi et al. "
     "2024): bubble (S-1)(F+I-W), about 1F1B's memory"},
    {PipelineSchedule::kZBH2, "zb-h2", true, false, 2, 2,
     "2(S-s)-1 forwards before the first input gradient, weight gradients filling the bubbles "
     "(ZB-H2): bubble (S-1)(F+I-2W) down to none, about twice 1F1B's memory"},
}};

}  // namespace

std::span<const ScheduleRow> PipelineSchedules() { return kSchedules; }

const ScheduleRow& RowOf(PipelineSchedule schedule) {
  return *std::find_if(kSchedules.begin(), kSchedules.end(),
                       [&](const ScheduleRow& r) { return r.schedule == schedule; });
}

std::optional<PipelineSchedule> ParsePipelineSchedule(std::string_view name) {
  for (const ScheduleRow& r : kSchedules) {
    if (r.name == name) return r.schedule;
  }
  return std::nullopt;
}

std::string_view PipelineScheduleName(PipelineSchedule schedule) { return RowOf(schedule).name; }

std::string PipelineScheduleNames() {
  std::string names;
  for (size_t i = 0; i < kSchedules.size(); ++i) {
    names += i == 0 ? "" : i + 1 == kSchedules.size() ? " or " : ", ";
    names += kSchedules[i].name;
  }
  return names;
}

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
  const int warmup = row.warmup_per_stage_after == 0 ? m : row.warmup_per_stage_after * depth;
  for (const sched::Task& t : sched::WarmupOrder(warmup, m))
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
