#include <algorithm>
#include <unordered_map>

#include "dplace/graph/graph_builder.h"
#include "dplace/io/id_edges.h"
#include "dplace/io/profiles.h"

namespace dplace::io {

bool IsPiperInput(const Json& j) {
  return j.is_object() && j.contains("maxDevices") && j.contains("nodes") && j.contains("edges");
}

StatusOr<GraphWithMachine> ReadPiperInput(const JsonNode& root, const std::string& name) {
  DPLACE_ASSIGN_OR_RETURN(JsonNode devices_node, root.Field("maxDevices"));
  DPLACE_ASSIGN_OR_RETURN(int64_t devices, devices_node.Integer());
  if (devices < 1 || devices > 4096) return devices_node.Error("must be between 1 and 4096");
  DPLACE_ASSIGN_OR_RETURN(JsonNode memory_node, root.Field("maxMemoryPerDevice"));
  DPLACE_ASSIGN_OR_RETURN(double memory, memory_node.NonNegativeNumber());
  DPLACE_ASSIGN_OR_RETURN(JsonNode bandwidth_node, root.Field("bandwidth"));
  DPLACE_ASSIGN_OR_RETURN(double bandwidth, bandwidth_node.NonNegativeNumber());
  if (bandwidth <= 0) return bandwidth_node.Error("must be positive");
  hw::ClusterBuilder cb("piper-" + std::to_string(devices) + "gpu");
  for (int64_t d = 0; d < devices; ++d) {
    cb.AddDevice({.name = "gpu" + std::to_string(d), .kind = "gpu", .memory_bytes = memory});
  }
  cb.SetDefaultLink({.bandwidth_bytes_per_s = bandwidth, .latency_s = 0});
  DPLACE_ASSIGN_OR_RETURN(hw::Cluster cluster, cb.Build());

  DPLACE_ASSIGN_OR_RETURN(JsonNode edges, root.Field("edges"));
  DPLACE_ASSIGN_OR_RETURN(auto edge_list, edges.Elements());
  std::unordered_map<int64_t, double> out_bytes;  // a layer's output: its largest out-edge
  for (const JsonNode& e : edge_list) {
    DPLACE_RETURN_IF_ERROR(e.OnlyKeys({"sourceId", "destId", "communicationCost"}));
    DPLACE_ASSIGN_OR_RETURN(JsonNode src, e.Field("sourceId"));
    DPLACE_ASSIGN_OR_RETURN(int64_t id, src.Integer());
    DPLACE_ASSIGN_OR_RETURN(JsonNode cost, e.Field("communicationCost"));
    DPLACE_ASSIGN_OR_RETURN(double bytes, cost.NonNegativeNumber());
    out_bytes[id] = std::max(out_bytes[id], bytes);
  }
  graph::GraphBuilder builder(name);
  std::unordered_map<int64_t, graph::OpId> by_id;
  DPLACE_ASSIGN_OR_RETURN(JsonNode nodes, root.Field("nodes"));
  DPLACE_ASSIGN_OR_RETURN(auto node_list, nodes.Elements());
  // Layer names repeat in some inputs ("tensor"); a repeated name gets its id appended.
  std::unordered_map<std::string, int> name_count;
  for (const JsonNode& node : node_list) {
    if (node.json().is_object() && node.json().contains("name") &&
        node.json()["name"].is_string()) {
      ++name_count[node.json()["name"].get<std::string>()];
    }
  }
  for (const JsonNode& node : node_list) {
    graph::Op op;
    DPLACE_RETURN_IF_ERROR(node.OnlyKeys({"id", "name", "TMPCs"}));
    DPLACE_ASSIGN_OR_RETURN(JsonNode id_node, node.Field("id"));
    DPLACE_ASSIGN_OR_RETURN(op.source_id, id_node.Integer());
    if (by_id.count(op.source_id))
      return id_node.Error("duplicate node id " + std::to_string(op.source_id));
    op.name = std::to_string(op.source_id);
    if (auto n = node.OptionalField("name")) {
      DPLACE_ASSIGN_OR_RETURN(op.name, n->String());
      if (name_count[op.name] > 1) op.name += "_" + std::to_string(op.source_id);
    }
    DPLACE_ASSIGN_OR_RETURN(JsonNode tmpcs, node.Field("TMPCs"));
    DPLACE_ASSIGN_OR_RETURN(JsonNode degree1, tmpcs.Field("1"));
    DPLACE_ASSIGN_OR_RETURN(auto options, degree1.Elements());
    const JsonNode* vanilla = nullptr;
    for (const JsonNode& o : options) {
      const Json& j = o.json();
      if (j.is_object() && j.contains("id") && j["id"].is_string() && j["id"] == "vanilla") {
        vanilla = &o;
      }
    }
    if (vanilla == nullptr) return degree1.Error("has no \"vanilla\" option");
    DPLACE_RETURN_IF_ERROR(vanilla->OnlyKeys({"id", "timePerSample", "memoryUsageA", "memoryUsageB",
                                              "parameterSize", "syncTimeFw", "syncTimeBw"}));
    DPLACE_ASSIGN_OR_RETURN(JsonNode time, vanilla->Field("timePerSample"));
    DPLACE_ASSIGN_OR_RETURN(double ms, time.NonNegativeNumber());
    op.time_s = {{"gpu", ms * 1e-3}};
    op.type = "PiperLayer";
    op.device_kinds = {"gpu"};
    DPLACE_ASSIGN_OR_RETURN(JsonNode b, vanilla->Field("memoryUsageB"));
    DPLACE_ASSIGN_OR_RETURN(op.param_bytes, b.NonNegativeNumber());
    DPLACE_ASSIGN_OR_RETURN(JsonNode a, vanilla->Field("memoryUsageA"));
    DPLACE_ASSIGN_OR_RETURN(op.scratch_bytes, a.NonNegativeNumber());
    const int64_t id = op.source_id;
    by_id[id] = builder.AddOp(std::move(op), {{out_bytes.count(id) ? out_bytes[id] : 0, -1}});
  }
  DPLACE_RETURN_IF_ERROR(AddIdEdges(edge_list, by_id, builder));
  DPLACE_ASSIGN_OR_RETURN(graph::Graph g, builder.Build());
  return GraphWithMachine{std::move(g), std::move(cluster)};
}

}  // namespace dplace::io
