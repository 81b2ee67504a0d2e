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

StatusOr<job::PiperInstance> ReadPiperInstance(const JsonNode& root) {
  job::PiperInstance in;
  DPLACE_ASSIGN_OR_RETURN(JsonNode devices_node, root.Field("maxDevices"));
  DPLACE_ASSIGN_OR_RETURN(int64_t devices, devices_node.Integer());
  if (devices < 1 || devices > 4096) return devices_node.Error("must be between 1 and 4096");
  in.max_devices = static_cast<int>(devices);
  DPLACE_ASSIGN_OR_RETURN(JsonNode memory_node, root.Field("maxMemoryPerDevice"));
  DPLACE_ASSIGN_OR_RETURN(in.memory_bytes, memory_node.NonNegativeNumber());
  if (in.memory_bytes <= 0) return memory_node.Error("must be positive");
  DPLACE_ASSIGN_OR_RETURN(JsonNode bandwidth_node, root.Field("bandwidth"));
  DPLACE_ASSIGN_OR_RETURN(in.bandwidth_bytes_per_s, bandwidth_node.NonNegativeNumber());
  if (in.bandwidth_bytes_per_s <= 0) return bandwidth_node.Error("must be positive");
  DPLACE_ASSIGN_OR_RETURN(JsonNode mbs_node, root.Field("mbsInBatch"));
  DPLACE_ASSIGN_OR_RETURN(int64_t mbs, mbs_node.Integer());
  if (mbs < 1 || mbs > 1000000) return mbs_node.Error("must be between 1 and 1000000");
  in.microbatches = static_cast<int>(mbs);
  DPLACE_ASSIGN_OR_RETURN(JsonNode nodes, root.Field("nodes"));
  DPLACE_ASSIGN_OR_RETURN(auto node_list, nodes.Elements());
  if (node_list.empty()) return nodes.Error("lists no layer");
  std::unordered_map<int64_t, int> position;
  for (const JsonNode& node : node_list) {
    DPLACE_ASSIGN_OR_RETURN(JsonNode id_node, node.Field("id"));
    DPLACE_ASSIGN_OR_RETURN(int64_t id, id_node.Integer());
    if (!position.emplace(id, static_cast<int>(position.size())).second) {
      return id_node.Error("duplicate node id " + std::to_string(id));
    }
  }
  in.layers.resize(node_list.size());
  DPLACE_ASSIGN_OR_RETURN(JsonNode edges, root.Field("edges"));
  DPLACE_ASSIGN_OR_RETURN(auto edge_list, edges.Elements());
  for (const JsonNode& e : edge_list) {
    DPLACE_RETURN_IF_ERROR(e.OnlyKeys({"sourceId", "destId", "communicationCost"}));
    int ends[2];
    const char* keys[2] = {"sourceId", "destId"};
    for (int k = 0; k < 2; ++k) {
      DPLACE_ASSIGN_OR_RETURN(JsonNode end, e.Field(keys[k]));
      DPLACE_ASSIGN_OR_RETURN(int64_t id, end.Integer());
      auto it = position.find(id);
      if (it == position.end()) return end.Error("no node has id " + std::to_string(id));
      ends[k] = it->second;
    }
    DPLACE_ASSIGN_OR_RETURN(JsonNode cost, e.Field("communicationCost"));
    DPLACE_ASSIGN_OR_RETURN(double bytes, cost.NonNegativeNumber());
    job::PiperLayer& from = in.layers[static_cast<size_t>(ends[0])];
    if (std::find(from.succs.begin(), from.succs.end(), ends[1]) != from.succs.end()) {
      return e.Error("a second edge between the same layers");
    }
    from.succs.push_back(ends[1]);
    from.succ_bytes.push_back(bytes);
    job::PiperLayer& to = in.layers[static_cast<size_t>(ends[1])];
    to.preds.push_back(ends[0]);
    to.pred_bytes.push_back(bytes);
  }
  // Node ids as the sync maps name them.
  std::unordered_map<int, int64_t> id_of;
  for (const auto& [id, at] : position) id_of[at] = id;
  for (size_t v = 0; v < node_list.size(); ++v) {
    const JsonNode& node = node_list[v];
    DPLACE_RETURN_IF_ERROR(node.OnlyKeys({"id", "name", "TMPCs"}));
    job::PiperLayer& layer = in.layers[v];
    layer.name = std::to_string(id_of[static_cast<int>(v)]);
    if (auto name = node.OptionalField("name")) {
      DPLACE_ASSIGN_OR_RETURN(std::string n, name->String());
      layer.name = n + "#" + layer.name;
    }
    DPLACE_ASSIGN_OR_RETURN(JsonNode tmpcs, node.Field("TMPCs"));
    DPLACE_ASSIGN_OR_RETURN(auto by_degree, tmpcs.Members());
    for (const auto& [key, list] : by_degree) {
      int t = 0;
      for (const char ch : key) t = ch >= '0' && ch <= '9' && t < 100000 ? t * 10 + (ch - '0') : -1;
      if (key.empty() || t < 1 || t > 4096) {
        return list.Error("'" + key + "' is not a tensor-parallel degree from 1 to 4096");
      }
      if (layer.options.size() <= static_cast<size_t>(t))
        layer.options.resize(static_cast<size_t>(t) + 1);
      DPLACE_ASSIGN_OR_RETURN(auto options, list.Elements());
      if (options.size() > 2) {
        return list.Error("more than two options (Piper's knapsack heuristic takes two)");
      }
      for (const JsonNode& o : options) {
        DPLACE_RETURN_IF_ERROR(o.OnlyKeys({"id", "timePerSample", "parameterSize", "memoryUsageA",
                                           "memoryUsageB", "syncTimeFw", "syncTimeBw"}));
        job::PiperOption opt;
        DPLACE_ASSIGN_OR_RETURN(JsonNode id_node, o.Field("id"));
        DPLACE_ASSIGN_OR_RETURN(opt.id, id_node.String());
        const std::pair<const char*, double*> numbers[] = {
            {"timePerSample", &opt.time_per_sample_s},
            {"parameterSize", &opt.parameter_bytes},
            {"memoryUsageA", &opt.memory_a},
            {"memoryUsageB", &opt.memory_b}};
        for (const auto& [key_name, out] : numbers) {
          DPLACE_ASSIGN_OR_RETURN(JsonNode field, o.Field(key_name));
          DPLACE_ASSIGN_OR_RETURN(*out, field.NonNegativeNumber());
        }
        // syncTimeFw is keyed by the layer's predecessors, syncTimeBw by its successors (bytes).
        const auto read_sync = [&](const char* key_name, const std::vector<int>& neighbours,
                                   std::vector<double>* out) -> Status {
          DPLACE_ASSIGN_OR_RETURN(JsonNode sync, o.Field(key_name));
          DPLACE_ASSIGN_OR_RETURN(auto members, sync.Members());
          out->assign(neighbours.size(), 0);
          if (members.size() != neighbours.size()) {
            return sync.Error("must name exactly the layer's " +
                              std::string(neighbours.empty() ? "(no) " : "") +
                              (key_name[8] == 'F' ? "predecessors" : "successors"));
          }
          for (const auto& [neighbour, value] : members) {
            int64_t id = -1;
            try {
              id = std::stoll(neighbour);
            } catch (const std::exception&) {
            }
            auto it = position.find(id);
            const auto slot = it == position.end()
                                  ? neighbours.end()
                                  : std::find(neighbours.begin(), neighbours.end(), it->second);
            if (slot == neighbours.end()) {
              return value.Error("'" + neighbour + "' is not a neighbour of this layer");
            }
            DPLACE_ASSIGN_OR_RETURN((*out)[static_cast<size_t>(slot - neighbours.begin())],
                                    value.NonNegativeNumber());
          }
          return OkStatus();
        };
        DPLACE_RETURN_IF_ERROR(read_sync("syncTimeFw", layer.preds, &opt.sync_fw));
        DPLACE_RETURN_IF_ERROR(read_sync("syncTimeBw", layer.succs, &opt.sync_bw));
        layer.options[static_cast<size_t>(t)].push_back(std::move(opt));
      }
    }
  }
  return in;
}

}  // namespace dplace::io
