#include "dplace/sim/max_load.h"

#include <algorithm>

#include "dplace/sim/constraints.h"

namespace dplace::sim {

MaxLoadEvaluator::MaxLoadEvaluator(const Problem& problem, MaxLoadOptions options)
    : problem_(problem), options_(std::move(options)) {
  const size_t n = problem.c().devices().size();
  pays_.resize(n);
  for (DeviceId d : problem.c().device_ids()) {
    pays_[d] = problem.c().device(d).kind != options_.free_communication_kind;
  }
  compute_.resize(n);
  comm_.resize(n);
  memory_.resize(n);
  stamp_.resize(n);
  for (DeviceId d : problem.c().device_ids()) op_times_.push_back(problem.costs.OpTimes(d));
  footprint_.resize(problem.g().ops().size());
  resident_.resize(problem.g().ops().size());
  for (OpId i{0}; i < problem.num_ops(); ++i) {
    footprint_[i] = OpFootprintBytes(problem.g(), i);
    resident_[i] = OpResidentBytes(problem.g(), i);
  }
}

double MaxLoadEvaluator::Value(const Placement& placement) {
  const graph::Graph& g = problem_.g();
  const hw::Cluster& c = problem_.c();
  std::fill(compute_.begin(), compute_.end(), 0.0);
  std::fill(comm_.begin(), comm_.end(), 0.0);
  std::fill(stamp_.begin(), stamp_.end(), graph::TensorId(-1));
  const int n = g.num_ops();
  for (OpId i{0}; i < n; ++i) {
    const DeviceId d = placement[i];
    compute_[d] += op_times_[d][i.index()];
  }
  const auto& tensors = g.tensors();
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    auto consumers = g.Consumers(t);
    if (consumers.empty()) continue;
    const graph::Tensor& tensor = tensors[t];
    const DeviceId src = placement[tensor.producer];
    double send = 0;
    bool sent = false;
    for (OpId consumer : consumers) {
      const DeviceId dst = placement[consumer];
      if (dst == src || stamp_[dst] == t) continue;
      stamp_[dst] = t;
      const double cost = cost::TransferTime(tensor, c.LinkBetween(src, dst));
      comm_[dst] += cost;
      send = std::max(send, cost);
      sent = true;
    }
    if (sent) comm_[src] += send;
  }
  double value = 0;
  for (DeviceId d : compute_.ids()) {
    value = std::max(value, compute_[d] + (pays_[d] ? comm_[d] : 0.0));
  }
  return value;
}

Evaluation MaxLoadEvaluator::Evaluate(const Placement& placement) {
  Evaluation e;
  e.objective = Objective::kThroughput;
  e.value = Value(placement);
  memory_ = StageMemoryBytes(problem_, placement, footprint_, resident_);
  e.devices.resize(compute_.size());
  for (OpId i{0}; i < problem_.num_ops(); ++i) ++e.devices[placement[i]].ops;
  for (DeviceId d : compute_.ids()) {
    DeviceReport& r = e.devices[d];
    r.busy_s = compute_[d];
    r.load = compute_[d] + (pays_[d] ? comm_[d] : 0.0);
    r.peak_memory_bytes = memory_[d];
    r.memory_capacity_bytes = problem_.c().device(d).memory_bytes;
  }
  e.reason = FindViolation(problem_, placement);
  if (e.reason.empty()) e.reason = FindMemoryViolation(problem_, e.devices);
  e.feasible = e.reason.empty();
  return e;
}

Evaluation EvaluateMaxLoad(const Problem& problem, const Placement& placement,
                           const MaxLoadOptions& options) {
  MaxLoadEvaluator evaluator(problem, options);
  return evaluator.Evaluate(placement);
}

}  // namespace dplace::sim
