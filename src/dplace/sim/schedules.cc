#include "dplace/sim/schedules.h"

#include <algorithm>
#include <array>

namespace dplace::sim {
namespace {

constexpr std::array<ScheduleRow, 4> kSchedules = {{
    {PipelineSchedule::kGPipe, "gpipe", false,
     "every forward, then every backward (GPipe): holds all micro-batches"},
    {PipelineSchedule::k1F1B, "1f1b", false,
     "stages - s warm-up forwards, then one forward, one backward (PipeDream-Flush)"},
    {PipelineSchedule::kZBH1, "zb-h1", true,
     "1F1B's forwards and input gradients; weight gradients fill the bubbles (ZB-H1, Qi et al. "
     "2024): bubble (S-1)(F+I-W), about 1F1B's memory"},
    {PipelineSchedule::kZBH2, "zb-h2", true,
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
  if (name == "full") return Recompute::kFull;
  if (name == "auto") return Recompute::kAuto;
  return std::nullopt;
}

std::string_view RecomputeName(Recompute recompute) {
  return recompute == Recompute::kNone ? "none" : recompute == Recompute::kFull ? "full" : "auto";
}

int InFlight(PipelineSchedule schedule, int stage, int stages, int microbatches) {
  switch (schedule) {
    case PipelineSchedule::kGPipe:
      return microbatches;
    case PipelineSchedule::k1F1B:
      return stages - stage;
    case PipelineSchedule::kZBH1:
      return std::min(stages, microbatches);
    case PipelineSchedule::kZBH2:
      return std::min(2 * stages - 1, microbatches);
  }
  return microbatches;
}

}  // namespace dplace::sim
