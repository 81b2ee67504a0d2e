#include "dplace/io/paper_json.h"

#include <cmath>
#include <unordered_map>

#include "dplace/graph/graph_builder.h"
#include "dplace/io/id_edges.h"

namespace dplace::io {

bool IsPaperInput(const Json& j) {
  return j.is_object() && j.contains("nodes") && j.contains("maxFPGAs");
}

bool IsPaperSplit(const Json& j) {
  return j.is_object() && (j.contains("fpgas") || j.contains("cpus")) && !j.contains("nodes");
}

namespace {

StatusOr<hw::Cluster> PaperCluster(const JsonNode& root) {
  DPLACE_ASSIGN_OR_RETURN(JsonNode k_node, root.Field("maxFPGAs"));
  DPLACE_ASSIGN_OR_RETURN(int64_t k, k_node.Integer());
  DPLACE_ASSIGN_OR_RETURN(JsonNode l_node, root.Field("maxCPUs"));
  DPLACE_ASSIGN_OR_RETURN(int64_t l, l_node.Integer());
  if (k < 0 || k > 4096) return k_node.Error("must be between 0 and 4096");
  if (l < 0 || l > 4096) return l_node.Error("must be between 0 and 4096");
  if (k + l == 0) return root.Error("maxFPGAs and maxCPUs are both 0: there is no device");
  double memory = hw::kUnlimited;
  if (auto size = root.OptionalField("maxSizePerFPGA")) {
    DPLACE_ASSIGN_OR_RETURN(memory, size->NonNegativeNumber());
  }
  hw::ClusterBuilder builder("paper-" + std::to_string(k) + "accel-" + std::to_string(l) + "cpu");
  for (int64_t i = 0; i < k; ++i) {
    builder.AddDevice({.name = "fpga" + std::to_string(i),
                       .kind = kPaperAcceleratorKind,
                       .memory_bytes = memory});
  }
  for (int64_t j = 0; j < l; ++j) {
    builder.AddDevice({.name = "cpu" + std::to_string(j), .kind = kPaperCpuKind});
  }
  return builder.Build();
}

}  // namespace

StatusOr<GraphWithMachine> ReadPaperInput(const JsonNode& root, const std::string& name) {
  DPLACE_RETURN_IF_ERROR(
      root.OnlyKeys({"maxFPGAs", "maxCPUs", "maxSizePerFPGA", "nodes", "edges"}));
  DPLACE_ASSIGN_OR_RETURN(hw::Cluster cluster, PaperCluster(root));
  graph::GraphBuilder builder(name);
  DPLACE_ASSIGN_OR_RETURN(JsonNode nodes, root.Field("nodes"));
  DPLACE_ASSIGN_OR_RETURN(auto node_list, nodes.Elements());
  DPLACE_ASSIGN_OR_RETURN(JsonNode edges, root.Field("edges"));
  DPLACE_ASSIGN_OR_RETURN(auto edge_list, edges.Elements());

  // The transfer cost of a node's output is the cost of its out-edges.
  std::unordered_map<int64_t, double> out_cost;
  for (const JsonNode& e : edge_list) {
    DPLACE_RETURN_IF_ERROR(e.OnlyKeys({"sourceId", "destId", "cost", "size"}));
    DPLACE_ASSIGN_OR_RETURN(JsonNode src, e.Field("sourceId"));
    DPLACE_ASSIGN_OR_RETURN(int64_t id, src.Integer());
    DPLACE_ASSIGN_OR_RETURN(JsonNode cost_node, e.Field("cost"));
    DPLACE_ASSIGN_OR_RETURN(double cost, cost_node.NonNegativeNumber());
    auto [it, inserted] = out_cost.emplace(id, cost);
    if (!inserted && std::fabs(it->second - cost) > 1e-6) {
      return cost_node.Error("node " + std::to_string(id) +
                             " has out-edges with different costs (" + std::to_string(it->second) +
                             " and " + std::to_string(cost) + ")");
    }
  }

  std::unordered_map<int64_t, graph::OpId> by_id;
  for (const JsonNode& node : node_list) {
    DPLACE_RETURN_IF_ERROR(
        node.OnlyKeys({"id", "name", "fpgaLatency", "cpuLatency", "supportedOnFpga",
                       "isBackwardNode", "size", "colorClass", "layerId"}));
    graph::Op op;
    DPLACE_ASSIGN_OR_RETURN(JsonNode id_node, node.Field("id"));
    DPLACE_ASSIGN_OR_RETURN(op.source_id, id_node.Integer());
    if (by_id.count(op.source_id)) {
      return id_node.Error("duplicate node id " + std::to_string(op.source_id));
    }
    op.name = std::to_string(op.source_id);
    if (auto n = node.OptionalField("name")) {
      DPLACE_ASSIGN_OR_RETURN(op.name, n->String());
    }
    op.type = "PaperNode";
    DPLACE_ASSIGN_OR_RETURN(JsonNode fpga, node.Field("fpgaLatency"));
    DPLACE_ASSIGN_OR_RETURN(double fpga_s, fpga.NonNegativeNumber());
    DPLACE_ASSIGN_OR_RETURN(JsonNode cpu, node.Field("cpuLatency"));
    DPLACE_ASSIGN_OR_RETURN(double cpu_s, cpu.NonNegativeNumber());
    op.time_s = {{kPaperAcceleratorKind, fpga_s}, {kPaperCpuKind, cpu_s}};
    DPLACE_ASSIGN_OR_RETURN(JsonNode supported, node.Field("supportedOnFpga"));
    DPLACE_ASSIGN_OR_RETURN(bool on_fpga, supported.Bool());
    if (!on_fpga) op.device_kinds = {kPaperCpuKind};
    DPLACE_ASSIGN_OR_RETURN(JsonNode backward, node.Field("isBackwardNode"));
    DPLACE_ASSIGN_OR_RETURN(bool is_backward, backward.Bool());
    op.kind = is_backward ? graph::OpKind::kBackward : graph::OpKind::kForward;
    if (auto size = node.OptionalField("size")) {
      DPLACE_ASSIGN_OR_RETURN(op.param_bytes, size->NonNegativeNumber());
    }
    if (auto color = node.OptionalField("colorClass")) {
      DPLACE_ASSIGN_OR_RETURN(int64_t cc, color->Integer());
      op.colocation = builder.Group("cc" + std::to_string(cc));
    }
    auto cost = out_cost.find(op.source_id);
    const double transfer_s = cost == out_cost.end() ? 0.0 : cost->second;
    const int64_t source_id = op.source_id;
    by_id[source_id] = builder.AddOp(std::move(op), {{0, transfer_s}});
  }
  DPLACE_RETURN_IF_ERROR(AddIdEdges(edge_list, by_id, builder));
  DPLACE_ASSIGN_OR_RETURN(graph::Graph g, builder.Build());
  return GraphWithMachine{std::move(g), std::move(cluster)};
}

Status FillFromGroups(const graph::Graph& g, sim::Placement* placement) {
  IdVector<graph::GroupId, hw::DeviceId> group_device(g.groups().size(), hw::DeviceId(-1));
  for (graph::OpId i{0}; i < g.num_ops(); ++i) {
    const graph::GroupId grp = g.op(i).colocation;
    const hw::DeviceId d = (*placement)[i];
    if (grp != graph::kNoGroup && d >= 0) group_device[grp] = d;
  }
  for (graph::OpId i{0}; i < g.num_ops(); ++i) {
    hw::DeviceId& d = (*placement)[i];
    if (d >= 0) continue;
    const graph::GroupId grp = g.op(i).colocation;
    if (grp != graph::kNoGroup) d = group_device[grp];
    if (d < 0) {
      return InvalidInput("op '" + g.op(i).name +
                          "' is not placed, and no op of its co-location group is");
    }
  }
  return OkStatus();
}

namespace {

// Devices that take the split's "fpgas" and "cpus" lists, in cluster order.
void SplitDevices(const hw::Cluster& c, std::vector<hw::DeviceId>* accels,
                  std::vector<hw::DeviceId>* cpus) {
  for (hw::DeviceId d{0}; d < c.num_devices(); ++d) {
    (c.device(d).kind == kPaperCpuKind ? cpus : accels)->push_back(d);
  }
}

}  // namespace

StatusOr<sim::Placement> ReadPaperSplit(const JsonNode& root, const graph::Graph& g,
                                        const hw::Cluster& c) {
  std::unordered_map<int64_t, graph::OpId> by_id;
  for (graph::OpId i{0}; i < g.num_ops(); ++i) {
    const int64_t id = g.op(i).source_id >= 0 ? g.op(i).source_id : i.value();
    by_id[id] = i;
  }
  std::vector<hw::DeviceId> accels, cpus;
  SplitDevices(c, &accels, &cpus);
  sim::Placement placement(g.ops().size(), sim::DeviceId(-1));
  const std::pair<const char*, const std::vector<hw::DeviceId>*> lists[] = {{"fpgas", &accels},
                                                                            {"cpus", &cpus}};
  DPLACE_RETURN_IF_ERROR(root.OnlyKeys({"fpgas", "cpus", "maxLoad"}));
  for (const auto& [key, devices] : lists) {
    auto list = root.OptionalField(key);
    if (!list) continue;
    DPLACE_ASSIGN_OR_RETURN(auto machines, list->Elements());
    for (size_t m = 0; m < machines.size(); ++m) {
      DPLACE_RETURN_IF_ERROR(machines[m].OnlyKeys({"nodes", "load"}));
      DPLACE_ASSIGN_OR_RETURN(JsonNode nodes, machines[m].Field("nodes"));
      DPLACE_ASSIGN_OR_RETURN(auto ids, nodes.Elements());
      if (ids.empty()) continue;
      if (m >= devices->size()) {
        return machines[m].Error("the cluster has only " + std::to_string(devices->size()) +
                                 (std::string(key) == "cpus" ? " CPUs" : " accelerators"));
      }
      for (const JsonNode& id_node : ids) {
        DPLACE_ASSIGN_OR_RETURN(int64_t id, id_node.Integer());
        auto it = by_id.find(id);
        if (it == by_id.end()) return id_node.Error("no node with id " + std::to_string(id));
        if (placement[it->second] >= 0) {
          return id_node.Error("node " + std::to_string(id) + " is placed twice");
        }
        placement[it->second] = (*devices)[m];
      }
    }
  }
  Status filled = FillFromGroups(g, &placement);
  if (!filled.ok()) return root.Error(filled.message());
  return placement;
}

Json WritePaperSplit(const graph::Graph& g, const hw::Cluster& c, const sim::Placement& placement,
                     const sim::Evaluation& evaluation) {
  std::vector<hw::DeviceId> accels, cpus;
  SplitDevices(c, &accels, &cpus);
  auto machines = [&](const std::vector<hw::DeviceId>& devices) {
    Json out = Json::array();
    for (hw::DeviceId d : devices) {
      Json nodes = Json::array();
      for (graph::OpId i{0}; i < g.num_ops(); ++i) {
        if (placement[i] != d) continue;
        nodes.push_back(g.op(i).source_id >= 0 ? g.op(i).source_id : int64_t{i.value()});
      }
      const double load = d.index() < evaluation.devices.size() ? evaluation.devices[d].load : -1;
      out.push_back({{"load", load}, {"nodes", nodes}});
    }
    return out;
  };
  return {{"maxLoad", evaluation.value}, {"fpgas", machines(accels)}, {"cpus", machines(cpus)}};
}

}  // namespace dplace::io
