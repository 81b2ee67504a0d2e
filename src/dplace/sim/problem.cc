#include "dplace/sim/problem.h"

#include "dplace/sim/lower_bound.h"

namespace dplace::sim {

std::string_view ObjectiveName(Objective objective) {
  switch (objective) {
    case Objective::kStep:
      return "step";
    case Objective::kThroughput:
      return "throughput";
    case Objective::kLatency:
      return "latency";
  }
  return "?";
}

std::string_view ValueName(Objective objective) {
  switch (objective) {
    case Objective::kStep:
      return "step time";
    case Objective::kThroughput:
      return "max-load";
    case Objective::kLatency:
      return "latency";
  }
  return "value";
}

std::optional<Objective> ParseObjective(std::string_view name) {
  if (name == "step") return Objective::kStep;
  if (name == "throughput") return Objective::kThroughput;
  if (name == "latency") return Objective::kLatency;
  return std::nullopt;
}

StatusOr<Problem> MakeProblem(std::shared_ptr<const graph::Graph> graph,
                              std::shared_ptr<const hw::Cluster> cluster, Objective objective,
                              const cost::CostModel& model, MissingDevice missing) {
  cost::CostTable costs(*graph, *cluster, model);
  return MakeProblem(std::move(graph), std::move(cluster), objective, std::move(costs), missing);
}

StatusOr<Problem> MakeProblem(std::shared_ptr<const graph::Graph> graph,
                              std::shared_ptr<const hw::Cluster> cluster, Objective objective,
                              cost::CostTable costs, MissingDevice missing) {
  const std::vector<std::string>& kinds = cluster->kinds();
  if (kinds.size() > 64) return InvalidInput("cluster has more than 64 device kinds");
  Problem p;
  p.objective = objective;
  p.allowed_kinds.resize(graph->ops().size());
  for (OpId i{0}; i < graph->num_ops(); ++i) {
    const graph::Op& op = graph->op(i);
    uint64_t mask = 0;
    for (size_t k = 0; k < kinds.size(); ++k) {
      if (op.AllowsKind(kinds[k])) mask |= uint64_t{1} << k;
    }
    if (mask == 0) {
      std::string list;
      for (const std::string& k : op.device_kinds) list += (list.empty() ? "" : ", ") + k;
      const std::string why = "op '" + op.name + "' may only run on [" + list +
                              "], which cluster '" + cluster->name() + "' does not have";
      if (missing == MissingDevice::kBadInput) return InvalidInput(why);
      if (p.infeasible_reason.empty()) p.infeasible_reason = why;
      mask = (kinds.size() == 64 ? ~uint64_t{0} : (uint64_t{1} << kinds.size()) - 1);
    }
    p.allowed_kinds[i] = mask;
    // A graph paired with a machine: an op whose time there can be neither read nor estimated
    // would take no time at all.
    for (size_t k = 0; k < kinds.size() && missing == MissingDevice::kBadInput; ++k) {
      if (!((mask >> k) & 1u) || op.MeasuredTime(kinds[k])) continue;
      const bool estimable = op.flops > 0 || op.bytes_accessed > 0;
      if (!estimable && !op.time_s.empty()) {
        return InvalidInput("op '" + op.name +
                            "' has measured times for other device kinds but "
                            "not for '" +
                            kinds[k] + "', and no FLOPs or bytes to estimate one");
      }
      if (!estimable) continue;
      for (const hw::Device& d : cluster->devices()) {
        if (d.kind == kinds[k] && d.peak_flops == 0 && d.memory_bandwidth_bytes_per_s == 0) {
          return InvalidInput("device '" + d.name +
                              "' has neither peak_flops nor "
                              "memory_bandwidth, and op '" +
                              op.name +
                              "' has no measured time "
                              "for kind '" +
                              kinds[k] + "': its time would be 0");
        }
      }
    }
  }
  p.costs = std::move(costs);
  p.graph = std::move(graph);
  p.cluster = std::move(cluster);
  // The bound of the problem's objective: the one every result states its gap to (a placer's
  // proof may raise it: run::Run).
  switch (p.objective) {
    case Objective::kStep:
      p.lower_bound = StepLowerBound(p);
      break;
    case Objective::kThroughput:
      p.lower_bound = ThroughputLowerBound(p);
      break;
    case Objective::kLatency:
      p.lower_bound = LatencyLowerBound(p);
      break;
  }
  return p;
}

}  // namespace dplace::sim
