#include <algorithm>
#include <set>
#include <unordered_map>

#include "dplace/base/union_find.h"
#include "dplace/graph/graph_builder.h"
#include "dplace/io/profiles.h"

namespace dplace::io {
namespace {

// One node of the file, as read before the graph is built.
struct BaechiNode {
  graph::Op op;
  std::vector<double> output_bytes;  // per output slot, from output_bytes_per_output
  std::vector<std::string> colocate_with;
  bool profiled = false;
};

// Reads a field that is a number or null; null (or absent) gives 0.
StatusOr<double> OptionalBytes(const JsonNode& node, std::string_view key) {
  auto field = node.OptionalField(key);
  if (!field) return 0.0;
  return field->NonNegativeNumber();
}

StatusOr<BaechiNode> ReadNode(const JsonNode& node, std::set<std::string>* kinds) {
  BaechiNode out;
  DPLACE_RETURN_IF_ERROR(
      node.OnlyKeys({"id", "name", "op", "compute_time_us", "output_bytes",
                     "output_bytes_per_output", "memory_bytes", "persistent_memory_bytes",
                     "temporary_memory_bytes", "colocation", "profiled", "tf_device"}));
  DPLACE_ASSIGN_OR_RETURN(JsonNode name, node.Field("name"));
  DPLACE_ASSIGN_OR_RETURN(out.op.name, name.String());
  if (auto type = node.OptionalField("op")) {
    DPLACE_ASSIGN_OR_RETURN(out.op.type, type->String());
  }
  if (auto time = node.OptionalField("compute_time_us")) {
    DPLACE_ASSIGN_OR_RETURN(auto members, time->Members());
    for (auto& [kind, value] : members) {
      DPLACE_ASSIGN_OR_RETURN(double us, value.NonNegativeNumber());
      out.op.time_s.emplace_back(kind, us * 1e-6);
      kinds->insert(kind);
    }
    out.profiled = true;
  }
  if (auto outputs = node.OptionalField("output_bytes_per_output")) {
    DPLACE_ASSIGN_OR_RETURN(auto slots, outputs->Elements());
    for (const JsonNode& s : slots) {
      DPLACE_ASSIGN_OR_RETURN(double bytes, s.NonNegativeNumber());
      out.output_bytes.push_back(bytes);
    }
  }
  DPLACE_ASSIGN_OR_RETURN(out.op.param_bytes, OptionalBytes(node, "persistent_memory_bytes"));
  DPLACE_ASSIGN_OR_RETURN(out.op.scratch_bytes, OptionalBytes(node, "temporary_memory_bytes"));
  if (auto coloc = node.OptionalField("colocation")) {
    DPLACE_ASSIGN_OR_RETURN(auto entries, coloc->Elements());
    for (const JsonNode& e : entries) {
      DPLACE_ASSIGN_OR_RETURN(std::string s, e.String());
      if (!s.starts_with("loc:@")) return e.Error("expected \"loc:@<op name>\", got '" + s + "'");
      out.colocate_with.push_back(s.substr(5));
    }
  }
  return out;
}

}  // namespace

bool IsBaechiProfile(const Json& j) {
  if (!j.is_object() || !j.contains("nodes") || !j.contains("edges")) return false;
  const Json& nodes = j["nodes"];
  return nodes.is_array() && !nodes.empty() && nodes[0].is_object() &&
         nodes[0].contains("compute_time_us");
}

StatusOr<graph::Graph> ReadBaechiProfile(const JsonNode& root, const std::string& name) {
  DPLACE_RETURN_IF_ERROR(root.OnlyKeys(
      {"name", "source", "license", "notes", "time_unit_raw", "devices", "nodes", "edges"}));
  DPLACE_ASSIGN_OR_RETURN(JsonNode nodes_node, root.Field("nodes"));
  DPLACE_ASSIGN_OR_RETURN(auto node_list, nodes_node.Elements());
  std::vector<BaechiNode> nodes;
  std::unordered_map<int64_t, size_t> index_of_id;
  std::unordered_map<std::string, size_t> index_of_name;
  std::set<std::string> kinds;
  for (const JsonNode& node : node_list) {
    DPLACE_ASSIGN_OR_RETURN(JsonNode id_node, node.Field("id"));
    DPLACE_ASSIGN_OR_RETURN(int64_t id, id_node.Integer());
    if (index_of_id.count(id)) return id_node.Error("duplicate node id " + std::to_string(id));
    DPLACE_ASSIGN_OR_RETURN(BaechiNode n, ReadNode(node, &kinds));
    n.op.source_id = id;
    index_of_id[id] = nodes.size();
    index_of_name[n.op.name] = nodes.size();
    nodes.push_back(std::move(n));
  }
  if (kinds.empty()) return nodes_node.Error("no node has a compute_time_us");

  // Edges: data edges read output `src_output_slot`; control edges ("control": true) read an
  // extra empty output of their source, so that they order without moving bytes.
  struct RawEdge {
    size_t from, to;
    int32_t slot;  // -1: control
  };
  DPLACE_ASSIGN_OR_RETURN(JsonNode edges_node, root.Field("edges"));
  DPLACE_ASSIGN_OR_RETURN(auto edge_list, edges_node.Elements());
  std::vector<RawEdge> edges;
  std::vector<int32_t> num_slots(nodes.size());
  std::vector<char> has_control(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    num_slots[i] = static_cast<int32_t>(nodes[i].output_bytes.size());
  }
  for (const JsonNode& e : edge_list) {
    DPLACE_RETURN_IF_ERROR(e.OnlyKeys({"src", "dst", "bytes", "control", "src_output_slot"}));
    size_t ends[2];
    const char* keys[2] = {"src", "dst"};
    for (int k = 0; k < 2; ++k) {
      DPLACE_ASSIGN_OR_RETURN(JsonNode field, e.Field(keys[k]));
      DPLACE_ASSIGN_OR_RETURN(int64_t id, field.Integer());
      auto it = index_of_id.find(id);
      if (it == index_of_id.end()) return field.Error("no node with id " + std::to_string(id));
      ends[k] = it->second;
    }
    bool control = false;
    if (auto c = e.OptionalField("control")) {
      DPLACE_ASSIGN_OR_RETURN(control, c->Bool());
    }
    int32_t slot = -1;
    if (!control) {
      int64_t s = 0;
      if (auto f = e.OptionalField("src_output_slot")) {
        DPLACE_ASSIGN_OR_RETURN(s, f->Integer());
        if (s < 0 || s > 65535) return f->Error("must be between 0 and 65535");
      }
      slot = static_cast<int32_t>(s);
      num_slots[ends[0]] = std::max(num_slots[ends[0]], slot + 1);
    } else {
      has_control[ends[0]] = 1;
    }
    edges.push_back({ends[0], ends[1], slot});
  }

  // Co-location: "loc:@x" puts the node in x's group; groups are named by their first member.
  UnionFind sets(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (const std::string& other : nodes[i].colocate_with) {
      auto it = index_of_name.find(other);
      if (it == index_of_name.end()) continue;  // a node the profile dropped: nothing to join
      sets.Join(static_cast<int32_t>(i), static_cast<int32_t>(it->second));
    }
  }
  std::vector<int> group_size(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i) {
    ++group_size[static_cast<size_t>(sets.Find(static_cast<int32_t>(i)))];
  }

  // Every node runs only on the kinds the profile measured; a node without a measurement (a
  // constant, an identity) takes no time there.
  graph::GraphBuilder builder(name);
  std::vector<graph::OpId> op_of(nodes.size());
  const std::vector<std::string> kind_list(kinds.begin(), kinds.end());
  std::vector<graph::GroupId> group_of(nodes.size(), graph::kNoGroup);
  for (size_t i = 0; i < nodes.size(); ++i) {
    const auto root_index = static_cast<size_t>(sets.Find(static_cast<int32_t>(i)));
    if (group_size[root_index] > 1) group_of[i] = builder.Group(nodes[root_index].op.name);
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    BaechiNode& n = nodes[i];
    if (!n.profiled) {
      for (const std::string& k : kind_list) n.op.time_s.emplace_back(k, 0.0);
    }
    n.op.device_kinds = kind_list;
    n.op.colocation = group_of[i];
    std::vector<graph::TensorSpec> outputs(static_cast<size_t>(num_slots[i]));
    for (size_t s = 0; s < n.output_bytes.size(); ++s) outputs[s].bytes = n.output_bytes[s];
    if (has_control[i]) outputs.push_back({});
    op_of[i] = builder.AddOp(std::move(n.op), std::move(outputs));
  }
  for (const RawEdge& e : edges) {
    const int32_t slot = e.slot >= 0 ? e.slot : num_slots[e.from];
    builder.AddEdge(op_of[e.from], slot, op_of[e.to]);
  }
  return builder.Build();
}

}  // namespace dplace::io
