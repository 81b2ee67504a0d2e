#include "dplace/sim/problem.h"

#include <algorithm>
#include <map>

#include "dplace/graph/modules.h"
#include "dplace/sim/objectives.h"

namespace dplace::sim {

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
  p.lower_bound = RowOf(objective).lower_bound(p);
  return p;
}

MappedModules MapModules(const graph::Graph& g) {
  const std::vector<std::string> module = graph::OpModules(g);
  auto module_of = [&](OpId op) -> const std::string& {
    return module[static_cast<size_t>(op.index())];
  };
  // A module is a leaf unless a module inside it has forward ops.
  std::map<std::string, bool> leaf;
  for (OpId op : g.op_ids()) {
    if (g.op(op).kind != graph::OpKind::kForward) continue;
    leaf.emplace(module_of(op), !module_of(op).empty());
  }
  for (const auto& [path, is_leaf] : leaf) {
    for (std::string m = path; !m.empty();) {
      m = graph::ParentModule(m);
      auto it = leaf.find(m);
      if (it != leaf.end()) it->second = false;
    }
  }
  MappedModules out;
  std::map<std::string, size_t> index;
  for (const auto& [path, is_leaf] : leaf) {
    index[path] = out.modules.size();
    out.modules.push_back({.path = path, .leaf = is_leaf});
  }
  for (OpId op : g.op_ids()) {
    if (g.op(op).kind != graph::OpKind::kForward) continue;
    const std::string& m = module_of(op);
    MappedModules::Module& own = out.modules[index[m]];
    if (!own.leaf) {
      own.own.push_back(op);
      continue;
    }
    // A leaf's op counts in the leaf and in every module around it.
    for (std::string around = m;; around = graph::ParentModule(around)) {
      auto it = index.find(around);
      if (it != index.end()) out.modules[it->second].ops.push_back(op);
      if (around.empty()) break;
    }
  }
  return out;
}

Placement Dispatched(const Problem& problem, const Placement& placement) {
  if (!problem.mapped_modules) return placement;
  const graph::Graph& g = problem.g();
  Placement out = placement;
  PerOp<char> follows(g.ops().size(), 0);  // own ops of modules not mapped whole
  for (const MappedModules::Module& m : problem.mapped_modules->modules) {
    if (m.leaf || m.own.empty()) continue;
    const bool whole = !m.ops.empty() && std::all_of(m.ops.begin(), m.ops.end(), [&](OpId op) {
      return placement[op] == placement[m.ops.front()];
    });
    for (OpId op : m.own) {
      if (whole) {
        out[op] = placement[m.ops.front()];
      } else {
        follows[op] = 1;
      }
    }
  }
  // The model's inputs are fed on the device of the first op mapped with a module, as
  // accelerate is fed (the batch on the first device): an own op reading none of the graph's
  // tensors (it reads the model's inputs, or makes a tensor) runs there.
  DeviceId fed = out[OpId(0)];
  for (OpId op : g.op_ids()) {
    if (!follows[op] && g.op(op).kind == graph::OpKind::kForward) {
      fed = out[op];
      break;
    }
  }
  for (OpId op : g.TopologicalOrder()) {
    if (!follows[op]) continue;
    out[op] = g.Inputs(op).empty() ? fed : out[g.tensor(g.Inputs(op).front()).producer];
  }
  // Backward and update ops go with their forward op.
  for (OpId op : g.op_ids()) {
    if (out[op] == placement[op] || g.op(op).colocation == graph::kNoGroup) continue;
    for (OpId member : g.GroupMembers(g.op(op).colocation)) out[member] = out[op];
  }
  return out;
}

void UseEagerRuntime(Problem& problem) {
  problem.step_model.issue = Issue::kProgramOrder;
  // A tied weight is one tensor on one device: its readers go where it is held.
  problem.graph = std::make_shared<const graph::Graph>(graph::TieSharedParameters(problem.g()));
  problem.mapped_modules = std::make_shared<const MappedModules>(MapModules(problem.g()));
}

StatusOr<std::shared_ptr<const Problem>> ProblemOn(const Problem& problem,
                                                   std::shared_ptr<const hw::Cluster> cluster,
                                                   cost::CostTable costs) {
  DPLACE_ASSIGN_OR_RETURN(Problem out,
                          MakeProblem(problem.graph, std::move(cluster), problem.objective,
                                      std::move(costs), MissingDevice::kInfeasible));
  out.lower_bound = problem.lower_bound;
  out.infeasible_reason = problem.infeasible_reason;
  out.step_model = problem.step_model;
  out.stage_memory = problem.stage_memory;
  out.schedule = problem.schedule;
  out.schedule_auto = problem.schedule_auto;
  out.virtual_stages = problem.virtual_stages;
  out.recompute = problem.recompute;
  out.microbatches = problem.microbatches;
  out.replicas_auto = problem.replicas_auto;
  out.times_in_seconds = problem.times_in_seconds;
  return std::make_shared<const Problem>(std::move(out));
}

StatusOr<std::shared_ptr<const Problem>> GroupedProblem(
    const Problem& problem, const std::vector<std::vector<DeviceId>>& groups) {
  DPLACE_ASSIGN_OR_RETURN(hw::Cluster grouped, problem.c().Grouped(groups));
  std::vector<DeviceId> first;
  for (const auto& group : groups) first.push_back(group.front());
  DPLACE_ASSIGN_OR_RETURN(
      std::shared_ptr<const Problem> out,
      ProblemOn(problem, std::make_shared<const hw::Cluster>(std::move(grouped)),
                problem.costs.Mapped(first)));
  return Changed(*out, [](Problem& fixed) { fixed.replicas_auto = false; });
}

Placement GroupedPlacement(const Placement& placement,
                           const std::vector<std::vector<DeviceId>>& groups) {
  std::vector<int32_t> group_of;
  for (size_t g = 0; g < groups.size(); ++g) {
    const size_t lead = groups[g].front().index();
    if (group_of.size() <= lead) group_of.resize(lead + 1, 0);
    group_of[lead] = static_cast<int32_t>(g);
  }
  Placement out;
  out.reserve(placement.size());
  for (DeviceId d : placement) {
    out.push_back(DeviceId(d.index() < group_of.size() ? group_of[d.index()] : 0));
  }
  return out;
}

}  // namespace dplace::sim
