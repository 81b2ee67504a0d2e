#include "dplace/sim/latency.h"

#include <algorithm>

namespace dplace::sim {

LatencyEvaluator::LatencyEvaluator(const Problem& problem) : problem_(problem), max_load_(problem) {
  for (DeviceId d{0}; d < problem.num_devices(); ++d) {
    pooled_.push_back(problem.c().device(d).kind == MaxLoadOptions().free_communication_kind);
  }
}

Evaluation LatencyEvaluator::Evaluate(const Placement& placement) {
  Evaluation e = max_load_.Evaluate(placement);
  e.objective = Objective::kLatency;
  const graph::Graph& g = problem_.g();
  // Nodes (plain indices): op i when it runs in the pool, n + d for the call of device d.
  const size_t n = g.ops().size();
  auto node_of = [&](OpId op) {
    const DeviceId d = placement[op];
    return pooled_[d] ? op.index() : n + d.index();
  };
  auto op_of = [](size_t x) { return OpId(static_cast<int32_t>(x)); };
  auto device_of = [&](size_t x) { return DeviceId(static_cast<int32_t>(x - n)); };
  const size_t nodes = n + problem_.c().devices().size();
  auto used = [&](size_t x) {
    return x < n ? node_of(op_of(x)) == x
                 : !pooled_[device_of(x)] && e.devices[device_of(x)].ops > 0;
  };
  indegree_.assign(nodes, 0);
  ready_.assign(nodes, 0.0);
  for (auto& ops : call_ops_) ops.clear();
  call_ops_.resize(problem_.c().devices().size());
  for (OpId v : g.op_ids()) {
    if (node_of(v) >= n) call_ops_[device_of(node_of(v))].push_back(v);
    for (OpId u : g.Predecessors(v)) {
      if (node_of(u) != node_of(v)) ++indegree_[node_of(v)];
    }
  }
  queue_.clear();
  size_t used_nodes = 0;
  for (size_t x = 0; x < nodes; ++x) {
    if (!used(x)) continue;
    ++used_nodes;
    if (indegree_[x] == 0) queue_.push_back(static_cast<int32_t>(x));
  }
  // Kahn's order over the nodes; a node's outputs are ready when it ends.
  double latency = 0;
  auto release = [&](OpId u, double end, size_t from) {
    for (OpId v : g.Successors(u)) {
      const size_t y = node_of(v);
      if (y == from) continue;
      ready_[y] = std::max(ready_[y], end);
      if (--indegree_[y] == 0) queue_.push_back(static_cast<int32_t>(y));
    }
  };
  for (size_t head = 0; head < queue_.size(); ++head) {
    const auto x = static_cast<size_t>(queue_[head]);
    if (x < n) {
      const double end = ready_[x] + problem_.costs.OpTime(op_of(x), placement[op_of(x)]);
      latency = std::max(latency, end);
      release(op_of(x), end, x);
    } else {
      const double end = ready_[x] + e.devices[device_of(x)].load;
      latency = std::max(latency, end);
      for (OpId op : call_ops_[device_of(x)]) release(op, end, x);
    }
  }
  e.value = latency;
  if (queue_.size() < used_nodes) {  // some calls wait on their own results
    std::string devices;
    for (DeviceId d : problem_.c().device_ids()) {
      if (e.devices[d].ops > 0 && !pooled_[d] && indegree_[n + d.index()] > 0) {
        devices += (devices.empty() ? "" : ", ") + problem_.c().device(d).name;
      }
    }
    double serial = 0;  // every call and pooled op one after another
    for (const DeviceReport& r : e.devices) serial += r.load;
    e.value = serial;
    if (e.feasible) {
      e.feasible = false;
      e.reason = "the ops on " + devices +
                 " wait on their own device's results (not a contiguous split): no single-sample "
                 "schedule";
    }
  }
  return e;
}

Evaluation EvaluateLatency(const Problem& problem, const Placement& placement) {
  LatencyEvaluator evaluator(problem);
  return evaluator.Evaluate(placement);
}

}  // namespace dplace::sim
