// Does the step fit one device, and is placement the tool to use at all?
//
// For each device kind of the machine: the step run whole on one device of that kind (the step
// simulator's peak memory, split into weights, gradients, optimiser state and activations), whether
// it fits, and the largest batch that would (activations scale with the batch, the rest does not).
// Beside it, what plain data parallelism over every device of that kind would give per sample:
// the one-device step, plus a ring all-reduce of the gradients over the links between them.
// Judges nothing about placements; the CLI prints it beside the placers' results.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dplace/sim/problem.h"

namespace dplace::sim {

struct MemoryNeed {
  double weights_bytes = 0;      // what forward ops hold (parameters, AMP's half copies)
  double gradients_bytes = 0;    // what backward ops hold (weight gradients)
  double optimizer_bytes = 0;    // what update ops hold (optimiser state)
  double activations_bytes = 0;  // the rest of the peak: outputs, copies, scratch
  double Total() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes;
  }
};

struct KindFit {
  std::string kind;
  DeviceId device{0};  // the device of that kind the step was run on (the first)
  int count = 0;       // devices of that kind
  double capacity_bytes = 0;
  MemoryNeed need;
  bool runs = true;  // every op may run on this kind
  bool fits = false;
  double step_s = 0;
  int64_t max_batch = -1;  // the largest batch that fits, where the batch is known; else -1
};

// One entry per device kind, in the machine's order. `batch` is the graph's batch size (0 when
// unknown). Step objective semantics, whatever the problem's objective.
std::vector<KindFit> FitOnOneDevice(const Problem& problem, int64_t batch);

struct DataParallel {
  int devices = 0;
  double step_s = 0;        // one device's step
  double allreduce_s = 0;   // ring all-reduce of the gradients (0 for inference)
  double per_sample_s = 0;  // (step + all-reduce) / (devices x batch)
};

// Data parallelism over every device of `fit.kind`, where the step fits one of them and the batch
// is known; nullopt otherwise.
std::optional<DataParallel> DataParallelStep(const Problem& problem, const KindFit& fit,
                                             int64_t batch);

}  // namespace dplace::sim
