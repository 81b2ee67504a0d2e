#include "dplace/sched/timeline.h"

#include <algorithm>

namespace dplace::sched {

Pipeline::Pipeline(int stages, int lanes, int microbatches)
    : stages_(stages),
      microbatches_(microbatches),
      seconds_(static_cast<size_t>(stages), {0, 0, 0}),
      first_lane_(static_cast<size_t>(stages)),
      replicas_(static_cast<size_t>(stages), 1),
      orders_(static_cast<size_t>(lanes)),
      weight_allowance_(static_cast<size_t>(lanes)) {
  for (int s = 0; s < stages; ++s) first_lane_[static_cast<size_t>(s)] = s % lanes;
}

void Pipeline::AddInput(int stage, Phase phase, Input input) {
  inputs_.emplace_back(static_cast<size_t>(stage) * kPhases + static_cast<size_t>(phase), input);
}

void Pipeline::SetLanes(int stage, int first_lane, int replicas) {
  first_lane_[static_cast<size_t>(stage)] = first_lane;
  replicas_[static_cast<size_t>(stage)] = replicas;
}

void Pipeline::DeferWeights(int lane, size_t allowance) {
  weight_allowance_[static_cast<size_t>(lane)] = allowance;
}

std::optional<Timeline> Timeline::Run(const Pipeline& p) {
  Timeline t;
  t.stages_ = p.stages_;
  const size_t cells =
      static_cast<size_t>(p.stages_) * static_cast<size_t>(p.microbatches_) * kPhases;
  constexpr double kNotYet = -1;
  t.start_.assign(cells, kNotYet);
  t.end_.assign(cells, kNotYet);
  const size_t num_lanes = p.orders_.size();
  t.lane_end_.assign(num_lanes, 0);
  // The inputs grouped per (stage, phase): those of key k are inputs[offset[k], offset[k + 1]).
  const size_t keys = static_cast<size_t>(p.stages_) * kPhases;
  std::vector<size_t> offset(keys + 1, 0);
  for (const auto& [key, in] : p.inputs_) ++offset[key + 1];
  for (size_t k = 0; k < keys; ++k) offset[k + 1] += offset[k];
  std::vector<Input> inputs(p.inputs_.size());
  {
    std::vector<size_t> fill(offset.begin(), offset.end() - 1);
    for (const auto& [key, in] : p.inputs_) inputs[fill[key]++] = in;
  }
  auto lane_of = [&](int stage, int m) {
    const auto s = static_cast<size_t>(stage);
    const int replicas = p.replicas_[s];
    const int lane = p.first_lane_[s] + (replicas == 1 ? 0 : m % replicas);
    return static_cast<size_t>(lane);
  };
  // When `task` could start: kNotYet while an input has not run.
  auto ready_at = [&](const LaneTask& task) {
    double ready = t.lane_end_[lane_of(task.stage, task.microbatch)];
    if (task.phase != Phase::kForward) {  // after its own stage's previous phase
      const double own = t.end_[t.At(task.stage, task.microbatch,
                                     static_cast<Phase>(static_cast<int>(task.phase) - 1))];
      if (own == kNotYet) return kNotYet;
      ready = std::max(ready, own);
    }
    const size_t key = static_cast<size_t>(task.stage) * kPhases + static_cast<size_t>(task.phase);
    for (size_t i = offset[key]; i < offset[key + 1]; ++i) {
      const Input& in = inputs[i];
      const double end = t.end_[t.At(in.stage, task.microbatch, in.phase)];
      if (end == kNotYet) return kNotYet;
      ready = std::max(ready, end + in.delay_s);
    }
    return ready;
  };
  auto settle = [&](const LaneTask& task, double at) {
    const double end =
        at + p.seconds_[static_cast<size_t>(task.stage)][static_cast<size_t>(task.phase)];
    const size_t cell = t.At(task.stage, task.microbatch, task.phase);
    t.start_[cell] = at;
    t.end_[cell] = end;
    t.lane_end_[lane_of(task.stage, task.microbatch)] = end;
    t.tasks_.push_back(task);
  };
  size_t left = 0;
  for (size_t lane = 0; lane < num_lanes; ++lane) {
    left += p.orders_[lane].size();
    if (!p.weight_allowance_[lane]) continue;
    for (const LaneTask& task : p.orders_[lane]) left += task.phase == Phase::kBackward ? 1 : 0;
  }
  t.tasks_.reserve(left);
  std::vector<size_t> next(num_lanes, 0);
  // Deferred weight gradients per lane, oldest first from waiting_from[lane]; empty (and never
  // allocated) on lanes whose order holds them.
  std::vector<std::vector<LaneTask>> waiting(num_lanes);
  std::vector<size_t> waiting_from(num_lanes, 0);
  // Each pass runs every lane's next tasks whose inputs have run; a pass that runs none deadlocks.
  // A task's start depends only on its lane's previous task and its inputs, so the order in which
  // lanes are visited changes no time.
  while (left > 0) {
    size_t ran = 0;
    for (size_t lane = 0; lane < num_lanes; ++lane) {
      const std::vector<LaneTask>& order = p.orders_[lane];
      size_t& k = next[lane];
      std::vector<LaneTask>& wait = waiting[lane];
      size_t& oldest = waiting_from[lane];
      for (;;) {
        const bool more = k < order.size();
        const double main = more ? ready_at(order[k]) : kNotYet;
        if (oldest < wait.size()) {
          const LaneTask& front = wait[oldest];
          const double w = ready_at(front);
          const bool due = wait.size() - oldest > *p.weight_allowance_[lane] || !more;
          const double length =
              p.seconds_[static_cast<size_t>(front.stage)][static_cast<size_t>(Phase::kWeight)];
          if (w != kNotYet && (due || (main != kNotYet && w + length <= main))) {
            settle(front, w);
            ++oldest;
            ++ran;
            continue;
          }
          if (due) break;
        }
        if (main == kNotYet) break;
        settle(order[k], main);
        if (order[k].phase == Phase::kBackward && p.weight_allowance_[lane]) {
          wait.push_back({order[k].stage, order[k].microbatch, Phase::kWeight});
        }
        ++k;
        ++ran;
      }
    }
    if (ran == 0) return std::nullopt;
    left -= ran;
  }
  return t;
}

}  // namespace dplace::sched
