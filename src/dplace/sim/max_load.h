// The max-load (pipelined throughput) model of Tarnawski et al., NeurIPS 2020, exactly as its
// program evaluates a split (DESIGN.md §3):
//   load(d) = Σ time of d's ops
//           + Σ over tensors d sends: the transfer cost, once per tensor (the most expensive of its
//             destinations; in the paper's setting every destination costs the same)
//           + Σ over tensors d receives: the transfer cost, once per (tensor, destination device);
// devices of kind "cpu" pay no communication (the paper's host CPU). Value = max over devices.
// Memory per device ≤ its capacity, as Problem::stage_memory counts it: Σ op footprint (parameters
// + scratch + outputs, the paper's op sizes), or 1F1B's stage memory (constraints.h).
#pragma once

#include <string>
#include <vector>

#include "dplace/sim/evaluation.h"

namespace dplace::sim {

struct MaxLoadOptions {
  // Device kind that pays no communication cost (the paper's CPU); empty: every device pays.
  std::string free_communication_kind = "cpu";
};

// Evaluates a placement that passed CheckShape. Constraint and memory violations make the result
// infeasible with a reason; the value is computed all the same.
Evaluation EvaluateMaxLoad(const Problem& problem, const Placement& placement,
                           const MaxLoadOptions& options = {});

// Reusable buffers so that repeated evaluations of one problem do not allocate (for search).
class MaxLoadEvaluator {
 public:
  explicit MaxLoadEvaluator(const Problem& problem, MaxLoadOptions options = {});
  // Max-load only (no reports, no constraint checks); the hot path of placers.
  double Value(const Placement& placement);
  Evaluation Evaluate(const Placement& placement);

 private:
  const Problem& problem_;
  MaxLoadOptions options_;
  IdVector<DeviceId, char> pays_;  // 1 when the device pays communication
  IdVector<DeviceId, double> compute_, comm_, memory_;
  IdVector<DeviceId, graph::TensorId> stamp_;    // the last tensor counted as received there
  IdVector<OpId, double> footprint_, resident_;  // per op: constraints.h
  IdVector<DeviceId, const double*> op_times_;   // op times indexed by OpId
};

}  // namespace dplace::sim
