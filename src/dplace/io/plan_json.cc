#include "dplace/io/plan_json.h"

#include "dplace/io/paper_json.h"

namespace dplace::io {

bool IsDplacePlan(const Json& j) {
  return j.is_object() && j.contains("format") && j["format"] == "dplace-plan/1";
}

StatusOr<sim::Placement> ReadPlan(const JsonNode& root, const graph::Graph& g,
                                  const hw::Cluster& c) {
  DPLACE_RETURN_IF_ERROR(
      root.OnlyKeys({"format", "graph", "cluster", "objective", "value", "feasible", "lower_bound",
                     "reason", "placer", "options", "placement"}));
  DPLACE_ASSIGN_OR_RETURN(JsonNode placement_node, root.Field("placement"));
  DPLACE_ASSIGN_OR_RETURN(auto members, placement_node.Members());
  sim::Placement placement(g.ops().size(), sim::DeviceId(-1));
  for (const auto& [op_name, device_node] : members) {
    auto op = g.FindOp(op_name);
    if (!op)
      return device_node.Error("unknown op '" + op_name + "' (not in graph '" + g.name() + "')");
    DPLACE_ASSIGN_OR_RETURN(std::string device_name, device_node.String());
    auto device = c.FindDevice(device_name);
    if (!device) {
      // A device of replicas ("gpu0+gpu1") is a group the plan was made on (--replicas).
      const std::string hint = device_name.find('+') != std::string::npos
                                   ? "; a group of replicas: give --replicas as the plan's groups"
                                   : "";
      return device_node.Error("unknown device '" + device_name + "' (not in cluster '" + c.name() +
                               "')" + hint);
    }
    placement[*op] = *device;
  }
  Status filled = FillFromGroups(g, &placement);
  if (!filled.ok()) return placement_node.Error(filled.message());
  return placement;
}

Json WritePlan(const graph::Graph& g, const hw::Cluster& c, const sim::Placement& placement,
               const sim::Evaluation& evaluation, const PlanInfo& info) {
  Json map = Json::object();
  for (graph::OpId i{0}; i < g.num_ops(); ++i) {
    map[g.op(i).name] = c.device(placement[i]).name;
  }
  Json j = {{"format", "dplace-plan/1"},
            {"graph", g.name()},
            {"cluster", c.name()},
            {"objective", sim::ObjectiveName(evaluation.objective)},
            {"value", evaluation.value},
            {"feasible", evaluation.feasible},
            {"lower_bound", info.lower_bound}};
  if (!evaluation.feasible) j["reason"] = evaluation.reason;
  if (!info.placer.empty()) j["placer"] = info.placer;
  if (!info.options.empty()) j["options"] = info.options;
  j["placement"] = std::move(map);
  return j;
}

}  // namespace dplace::io
