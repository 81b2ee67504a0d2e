// The result of judging one placement: objective value, feasibility (as data, with the reason),
// the problem's lower bound, and per-device usage; optionally the timeline of the step.
#pragma once

#include <string>
#include <vector>

#include "dplace/sim/problem.h"

namespace dplace::sim {

struct DeviceReport {
  int ops = 0;
  double busy_s = 0;             // step: seconds of compute; throughput: compute part of the load
  double load = 0;               // throughput: compute + communication (the max-load term)
  double peak_memory_bytes = 0;  // step: simulated peak; throughput: sum of op footprints
  double memory_capacity_bytes = 0;
};

struct OpInterval {
  OpId op;
  DeviceId device;
  double start_s, end_s;
};
struct TransferInterval {
  graph::TensorId tensor;
  DeviceId src, dst;
  double start_s, end_s;
};
struct MemorySample {
  DeviceId device;
  double time_s;
  double bytes;
};

// What happened in one simulated step, in the order it happened.
struct Timeline {
  std::vector<OpInterval> ops;
  std::vector<TransferInterval> transfers;
  std::vector<MemorySample> memory;
};

// What an observer of one simulated step reads beyond its evaluation: per op when it started and
// ended, and the critical path by the simulator's own rule (StepSimulator::CriticalPath), the last
// op first. Empty where the objective has no timeline (throughput, latency, pipeline).
struct Timing {
  PerOp<double> start_s, end_s;
  std::vector<OpId> critical_path;
  double makespan_s = 0;
};

struct Evaluation {
  Objective objective = Objective::kStep;
  double value = 0;  // step time or max-load, seconds (or the input's time unit)
  bool feasible = true;
  std::string reason;  // why infeasible; empty when feasible
  PerDevice<DeviceReport> devices;
};

}  // namespace dplace::sim
