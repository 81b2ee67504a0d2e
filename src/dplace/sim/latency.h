// Single-sample latency of a split, the objective of Tarnawski et al.'s latency integer program
// (DESIGN.md §3, docs/semantics.md):
//   - devices of kind "cpu" form the host pool: each of their ops runs as soon as its inputs are
//     ready, in parallel with anything else (the paper assumes as many CPU cores as needed), and
//     pays no communication;
//   - every other device runs its ops as one call: the call starts when every input produced
//     outside it is ready, lasts the device's max-load term (its compute plus the transfers it
//     sends and receives, max_load.h), and its ops' outputs are ready when it ends;
//   - latency = when the last op's output is ready.
// A split whose calls wait on each other's results (one device's ops are not contiguous, or two
// devices feed each other) has no single-sample schedule: it is infeasible, with the devices named.
// Memory and constraints are judged as for max-load.
#pragma once

#include <vector>

#include "dplace/sim/max_load.h"

namespace dplace::sim {

class LatencyEvaluator {
 public:
  explicit LatencyEvaluator(const Problem& problem);
  Evaluation Evaluate(const Placement& placement);

 private:
  const Problem& problem_;
  MaxLoadEvaluator max_load_;
  PerDevice<char> pooled_;  // kind "cpu"
  std::vector<int32_t> indegree_, queue_;
  PerDevice<std::vector<OpId>> call_ops_;  // per device that runs a call: its ops
  std::vector<double> ready_;  // per node (ops first, then one per device): when it may start
};

Evaluation EvaluateLatency(const Problem& problem, const Placement& placement);

}  // namespace dplace::sim
