// A simulator of pipeline schedules over lanes of task orders: the one simulator of both pipeline
// simulations, the op-level pipeline of a placement (sim/pipeline_sim.h) and the job planner's
// per-rank action orders (job/schedule.h). A caller says its stages, what each phase of a stage
// waits for, how long it takes, and every lane's order of tasks (a lane: a pipeline rank, or one
// replica of a stage); Timeline::Run runs each lane's tasks in its order, each as soon as the lane
// is free and its inputs are there.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace dplace::sched {

// A task's phase: forward (F), backward (B; under a schedule that splits it, the input gradients
// I) and weight gradients (W), the letters of torch.distributed.pipelining's actions.
enum class Phase : int8_t { kForward = 0, kBackward = 1, kWeight = 2 };
inline constexpr int kPhases = 3;

// One task of a lane: a phase of a micro-batch on a stage (a virtual stage where ranks run
// several).
struct LaneTask {
  int stage = 0;
  int microbatch = 0;
  Phase phase = Phase::kForward;
};

// What a task waits for besides its lane and its own stage's previous phase of the same
// micro-batch: the end of `phase` of the same micro-batch on `stage`, plus `delay_s` (a transfer).
struct Input {
  int stage = 0;
  Phase phase = Phase::kForward;
  double delay_s = 0;
};

class Pipeline {
 public:
  // `stages` stages on `lanes` lanes; every stage's phases take no time and wait for nothing
  // until said, and each stage runs on lane stage % lanes.
  Pipeline(int stages, int lanes, int microbatches);

  // How long a task of `phase` on `stage` takes.
  void SetSeconds(int stage, Phase phase, double seconds) {
    seconds_[static_cast<size_t>(stage)][static_cast<size_t>(phase)] = seconds;
  }
  // A task of (stage, phase) waits for `input` of the same micro-batch. Each (to, from) once.
  void AddInput(int stage, Phase phase, Input input);
  // Stage `stage` runs micro-batch m on lane first_lane + m % replicas (its replicas' lanes).
  void SetLanes(int stage, int first_lane, int replicas);
  // Lane `lane`'s tasks in order.
  void SetOrder(int lane, std::vector<LaneTask> order) {
    orders_[static_cast<size_t>(lane)] = std::move(order);
  }
  // Weight gradients left out of the lane's order: each backward the lane runs queues its own
  // weight gradient, and the oldest queued one runs in a gap before the lane's next task that it
  // fits (it ends by the time that task could start), when more than `allowance` wait, and once
  // the lane's order is done (zero bubble as Qi et al. 2024's schedules fill their bubbles).
  void DeferWeights(int lane, size_t allowance);

  int stages() const { return stages_; }
  int lanes() const { return static_cast<int>(orders_.size()); }
  int microbatches() const { return microbatches_; }

 private:
  friend class Timeline;
  int stages_, microbatches_;
  std::vector<std::array<double, kPhases>> seconds_;
  // Every input with the (stage, phase) that waits for it: stage * kPhases + phase. One flat list,
  // grouped per (stage, phase) when the pipeline runs, so a pipeline costs a few allocations.
  std::vector<std::pair<size_t, Input>> inputs_;
  std::vector<int> first_lane_, replicas_;
  std::vector<std::vector<LaneTask>> orders_;
  std::vector<std::optional<size_t>> weight_allowance_;  // per lane; none: W in its order
};

// When each task of a pipeline ran.
class Timeline {
 public:
  // The pipeline run: nullopt when its orders deadlock (a lane waits for a task that waits for it).
  static std::optional<Timeline> Run(const Pipeline& p);

  // When (stage, micro-batch, phase) started and ended; -1 for a task that never ran.
  double Start(int stage, int microbatch, Phase phase) const {
    return start_[At(stage, microbatch, phase)];
  }
  double End(int stage, int microbatch, Phase phase) const {
    return end_[At(stage, microbatch, phase)];
  }
  // Per lane, when its last task ended (0 for a lane with none).
  const std::vector<double>& lane_end() const { return lane_end_; }
  // Every task in the order it was settled (a lane's tasks in its order).
  const std::vector<LaneTask>& tasks() const { return tasks_; }

 private:
  size_t At(int stage, int microbatch, Phase phase) const {
    return (static_cast<size_t>(microbatch) * static_cast<size_t>(stages_) +
            static_cast<size_t>(stage)) *
               kPhases +
           static_cast<size_t>(phase);
  }
  int stages_ = 0;
  std::vector<double> start_, end_;
  std::vector<double> lane_end_;
  std::vector<LaneTask> tasks_;
};

}  // namespace dplace::sched
