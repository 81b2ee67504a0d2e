#include "dplace/sched/schedules.h"

#include <algorithm>
#include <array>

namespace dplace::sched {
namespace {

constexpr std::array<ScheduleRow, 5> kSchedules = {{
    {Schedule::kGPipe, "gpipe", false, false, 0, 0,
     "every forward, then every backward (GPipe): holds all micro-batches"},
    {Schedule::k1F1B, "1f1b", false, false, 1, 0,
     "stages - s warm-up forwards, then one forward, one backward (PipeDream-Flush, Megatron-LM's "
     "default)"},
    {Schedule::kInterleaved, "interleaved", false, true, 1, 0,
     "V chunks a device, round robin, 1F1B over them (Megatron-LM's interleaved schedule): "
     "bubble (S-1)/(VM+S-1); micro-batches a multiple of the stages"},
    {Schedule::kZbH1, "zb-h1", true, false, 1, 1,
     "1F1B's forwards and input gradients; weight gradients fill the bubbles (ZB-H1, Qi et al. "
     "2024): bubble (S-1)(F+I-W), 1F1B's memory"},
    {Schedule::kZbH2, "zb-h2", true, false, 2, 2,
     "2(S-s)-1 forwards before the first input gradient, weight gradients filling the bubbles "
     "(ZB-H2): bubble (S-1)(F+I-2W) down to none, about twice 1F1B's memory"},
}};

}  // namespace

std::span<const ScheduleRow> Schedules() { return kSchedules; }

const ScheduleRow& RowOf(Schedule schedule) {
  return *std::find_if(kSchedules.begin(), kSchedules.end(),
                       [&](const ScheduleRow& r) { return r.schedule == schedule; });
}

std::optional<Schedule> ScheduleNamed(std::string_view name) {
  for (const ScheduleRow& r : kSchedules) {
    if (r.name == name) return r.schedule;
  }
  return std::nullopt;
}

std::string_view ScheduleName(Schedule schedule) { return RowOf(schedule).name; }

std::string ScheduleNames() {
  std::string names;
  for (size_t i = 0; i < kSchedules.size(); ++i) {
    names += i == 0 ? "" : i + 1 == kSchedules.size() ? " or " : ", ";
    names += kSchedules[i].name;
  }
  return names;
}

int WarmupForwards(const ScheduleRow& row, int depth, int m) {
  return row.warmup_per_stage_after == 0 ? m : row.warmup_per_stage_after * depth;
}

}  // namespace dplace::sched
