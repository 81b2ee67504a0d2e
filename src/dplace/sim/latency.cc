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
  e.lower_bound = problem_.lower_bound;
  const graph::Graph& g = problem_.g();
  const int n = g.num_ops();
  // Nodes: op i when it runs in the pool, n + d for the call of device d.
  auto node_of = [&](OpId op) {
    const DeviceId d = placement[op];
    return pooled_[static_cast<size_t>(d)] ? op : n + d;
  };
  const size_t nodes = static_cast<size_t>(n) + static_cast<size_t>(problem_.num_devices());
  auto used = [&](size_t x) {
    return x < static_cast<size_t>(n) ? node_of(static_cast<OpId>(x)) == static_cast<int>(x)
                                      : !pooled_[x - static_cast<size_t>(n)] &&
                                            e.devices[x - static_cast<size_t>(n)].ops > 0;
  };
  indegree_.assign(nodes, 0);
  ready_.assign(nodes, 0.0);
  for (auto& ops : call_ops_) ops.clear();
  call_ops_.resize(static_cast<size_t>(problem_.num_devices()));
  for (OpId v{0}; v < n; ++v) {
    if (node_of(v) >= n) call_ops_[static_cast<size_t>(node_of(v) - n)].push_back(v);
    for (OpId u : g.Predecessors(v)) {
      if (node_of(u) != node_of(v)) ++indegree_[static_cast<size_t>(node_of(v))];
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
      const auto y = static_cast<size_t>(node_of(v));
      if (y == from) continue;
      ready_[y] = std::max(ready_[y], end);
      if (--indegree_[y] == 0) queue_.push_back(static_cast<int32_t>(y));
    }
  };
  for (size_t head = 0; head < queue_.size(); ++head) {
    const auto x = static_cast<size_t>(queue_[head]);
    if (x < static_cast<size_t>(n)) {
      const double end =
          ready_[x] + problem_.costs.OpTime(OpId(static_cast<int32_t>(x)),
                                            placement[OpId(static_cast<int32_t>(x))]);
      latency = std::max(latency, end);
      release(static_cast<OpId>(x), end, x);
    } else {
      const double end = ready_[x] + e.devices[x - static_cast<size_t>(n)].load;
      latency = std::max(latency, end);
      for (OpId op : call_ops_[x - static_cast<size_t>(n)]) release(op, end, x);
    }
  }
  e.value = latency;
  if (queue_.size() < used_nodes) {  // some calls wait on their own results
    std::string devices;
    for (DeviceId d{0}; d < problem_.num_devices(); ++d) {
      if (e.devices[static_cast<size_t>(d)].ops > 0 && !pooled_[static_cast<size_t>(d)] &&
          indegree_[static_cast<size_t>(n) + static_cast<size_t>(d)] > 0) {
        devices += (devices.empty() ? "" : ", ") + problem_.c().device(d).name;
      }
    }
    double serial = 0;  // every call and pooled op one after another
    for (DeviceId d{0}; d < problem_.num_devices(); ++d) {
      serial += e.devices[static_cast<size_t>(d)].load;
    }
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
