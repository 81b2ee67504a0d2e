#include "dplace/io/graph_json.h"

#include <cstdint>
#include <unordered_map>

#include "dplace/graph/graph_builder.h"

namespace dplace::io {
namespace {

Status ReadOptionalCost(const JsonNode& node, const char* key, double* out) {
  if (auto field = node.OptionalField(key)) {
    if (field->json().is_string()) {
      DPLACE_ASSIGN_OR_RETURN(*out, field->Bytes());
    } else {
      DPLACE_ASSIGN_OR_RETURN(*out, field->NonNegativeNumber());
    }
  }
  return OkStatus();
}

using OpIds = std::unordered_map<std::string, graph::OpId>;

// One element of "outputs": its bytes, or {"bytes": B, "cpu_bytes": C, "view_of": {"op": NAME,
// "output": K}} (each key but "bytes" optional; "view_of": null for a view of a parameter or a
// model input).
StatusOr<graph::TensorSpec> ReadOutput(const JsonNode& e, const OpIds& ids) {
  graph::TensorSpec spec;
  if (!e.json().is_object()) {
    DPLACE_ASSIGN_OR_RETURN(spec.bytes, e.Bytes());
    return spec;
  }
  DPLACE_RETURN_IF_ERROR(e.OnlyKeys({"bytes", "cpu_bytes", "view_of"}));
  DPLACE_ASSIGN_OR_RETURN(JsonNode bytes, e.Field("bytes"));
  DPLACE_ASSIGN_OR_RETURN(spec.bytes, bytes.Bytes());
  if (auto cpu = e.OptionalField("cpu_bytes")) {
    DPLACE_ASSIGN_OR_RETURN(spec.cpu_bytes, cpu->Bytes());
  }
  if (!e.json().contains("view_of")) return spec;
  spec.view = true;
  if (auto base = e.OptionalField("view_of")) {  // null: a view of something outside the graph
    DPLACE_RETURN_IF_ERROR(base->OnlyKeys({"op", "output"}));
    DPLACE_ASSIGN_OR_RETURN(JsonNode op, base->Field("op"));
    DPLACE_ASSIGN_OR_RETURN(std::string name, op.String());
    auto it = ids.find(name);
    if (it == ids.end()) return op.Error("unknown op '" + name + "' (a view's base comes first)");
    spec.view_of_op = it->second;
    if (auto out = base->OptionalField("output")) {
      DPLACE_ASSIGN_OR_RETURN(int64_t k, out->Integer());
      if (k < 0 || k > INT32_MAX) return out->Error("must be an output index");
      spec.view_of_output = static_cast<int32_t>(k);
    }
  }
  return spec;
}

StatusOr<graph::Op> ReadOp(const JsonNode& node, graph::GraphBuilder& builder, const OpIds& ids,
                           std::vector<graph::TensorSpec>* outputs) {
  graph::Op op;
  DPLACE_RETURN_IF_ERROR(node.OnlyKeys({"name",
                                        "type",
                                        "kind",
                                        "time_s",
                                        "flops",
                                        "bytes_accessed",
                                        "param_bytes",
                                        "scratch_bytes",
                                        "saved_bytes",
                                        "saved_bytes_cpu",
                                        "saves_output",
                                        "backward_factor",
                                        "weight_gradient_share",
                                        "outputs",
                                        "transfer_time_s",
                                        "colocation",
                                        "device_kinds",
                                        "source_id",
                                        "parameters",
                                        "shared_parameters"}));
  DPLACE_ASSIGN_OR_RETURN(JsonNode name, node.Field("name"));
  DPLACE_ASSIGN_OR_RETURN(op.name, name.String());
  if (op.name.empty()) return name.Error("must not be empty");
  if (auto type = node.OptionalField("type")) {
    DPLACE_ASSIGN_OR_RETURN(op.type, type->String());
  }
  if (auto kind = node.OptionalField("kind")) {
    DPLACE_ASSIGN_OR_RETURN(std::string text, kind->String());
    auto parsed = graph::ParseOpKind(text);
    if (!parsed) return kind->Error("must be forward, backward or update (got '" + text + "')");
    op.kind = *parsed;
  }
  if (auto times = node.OptionalField("time_s")) {
    DPLACE_ASSIGN_OR_RETURN(auto members, times->Members());
    for (const auto& [device_kind, value] : members) {
      DPLACE_ASSIGN_OR_RETURN(double seconds, value.NonNegativeNumber());
      op.time_s.emplace_back(device_kind, seconds);
    }
  }
  DPLACE_RETURN_IF_ERROR(ReadOptionalCost(node, "flops", &op.flops));
  DPLACE_RETURN_IF_ERROR(ReadOptionalCost(node, "bytes_accessed", &op.bytes_accessed));
  DPLACE_RETURN_IF_ERROR(ReadOptionalCost(node, "param_bytes", &op.param_bytes));
  DPLACE_RETURN_IF_ERROR(ReadOptionalCost(node, "scratch_bytes", &op.scratch_bytes));
  DPLACE_RETURN_IF_ERROR(ReadOptionalCost(node, "saved_bytes", &op.saved_bytes));
  DPLACE_RETURN_IF_ERROR(ReadOptionalCost(node, "saved_bytes_cpu", &op.saved_bytes_cpu));
  if (auto saves = node.OptionalField("saves_output")) {
    DPLACE_ASSIGN_OR_RETURN(op.saves_output, saves->Bool());
  }
  if (auto factor = node.OptionalField("backward_factor")) {
    DPLACE_ASSIGN_OR_RETURN(op.backward_factor, factor->NonNegativeNumber());
  }
  if (auto share = node.OptionalField("weight_gradient_share")) {
    DPLACE_ASSIGN_OR_RETURN(op.weight_gradient_share, share->NonNegativeNumber());
    if (op.weight_gradient_share > 1) return share->Error("must be a share from 0 to 1");
  }
  if (auto outs = node.OptionalField("outputs")) {
    DPLACE_ASSIGN_OR_RETURN(auto elements, outs->Elements());
    for (const JsonNode& e : elements) {
      DPLACE_ASSIGN_OR_RETURN(graph::TensorSpec spec, ReadOutput(e, ids));
      outputs->push_back(spec);
    }
  }
  if (auto transfer = node.OptionalField("transfer_time_s")) {
    DPLACE_ASSIGN_OR_RETURN(double seconds, transfer->NonNegativeNumber());
    if (outputs->empty()) outputs->push_back({});
    for (auto& spec : *outputs) spec.transfer_time_s = seconds;
  }
  if (auto group = node.OptionalField("colocation")) {
    DPLACE_ASSIGN_OR_RETURN(std::string text, group->String());
    op.colocation = builder.Group(text);
  }
  if (auto kinds = node.OptionalField("device_kinds")) {
    DPLACE_ASSIGN_OR_RETURN(auto elements, kinds->Elements());
    if (elements.empty()) return kinds->Error("lists no device kind: the op could run nowhere");
    for (const JsonNode& e : elements) {
      DPLACE_ASSIGN_OR_RETURN(std::string k, e.String());
      op.device_kinds.push_back(k);
    }
  }
  for (auto [key, list] : {std::pair{"parameters", &op.parameters},
                           std::pair{"shared_parameters", &op.shared_parameters}}) {
    auto names = node.OptionalField(key);
    if (!names) continue;
    DPLACE_ASSIGN_OR_RETURN(auto elements, names->Elements());
    for (const JsonNode& e : elements) {
      DPLACE_ASSIGN_OR_RETURN(std::string parameter, e.String());
      if (parameter.empty()) return e.Error("must not be empty");
      list->push_back(std::move(parameter));
    }
  }
  if (auto id = node.OptionalField("source_id")) {
    DPLACE_ASSIGN_OR_RETURN(op.source_id, id->Integer());
  }
  return op;
}

}  // namespace

StatusOr<graph::Graph> ReadDplaceGraph(const JsonNode& root) {
  DPLACE_RETURN_IF_ERROR(root.OnlyKeys({"format", "name", "source", "batch", "ops", "edges"}));
  std::string name = "graph";
  if (auto n = root.OptionalField("name")) {
    DPLACE_ASSIGN_OR_RETURN(name, n->String());
  }
  graph::GraphBuilder builder(name);
  DPLACE_ASSIGN_OR_RETURN(JsonNode ops, root.Field("ops"));
  DPLACE_ASSIGN_OR_RETURN(auto op_nodes, ops.Elements());
  OpIds ids;
  for (const JsonNode& node : op_nodes) {
    std::vector<graph::TensorSpec> outputs;
    DPLACE_ASSIGN_OR_RETURN(graph::Op op, ReadOp(node, builder, ids, &outputs));
    const std::string op_name = op.name;
    if (ids.count(op_name)) return node.Error("duplicate op name '" + op_name + "'");
    ids[op_name] = builder.AddOp(std::move(op), std::move(outputs));
  }
  if (auto edges = root.OptionalField("edges")) {
    DPLACE_ASSIGN_OR_RETURN(auto edge_nodes, edges->Elements());
    for (const JsonNode& e : edge_nodes) {
      DPLACE_RETURN_IF_ERROR(e.OnlyKeys({"from", "to", "output", "saved"}));
      graph::OpId endpoints[2];
      const char* keys[2] = {"from", "to"};
      for (int k = 0; k < 2; ++k) {
        DPLACE_ASSIGN_OR_RETURN(JsonNode field, e.Field(keys[k]));
        DPLACE_ASSIGN_OR_RETURN(std::string op_name, field.String());
        auto it = ids.find(op_name);
        if (it == ids.end()) return field.Error("unknown op '" + op_name + "'");
        endpoints[k] = it->second;
      }
      int64_t output = 0;
      if (auto out = e.OptionalField("output")) {
        DPLACE_ASSIGN_OR_RETURN(output, out->Integer());
        if (output < 0) return out->Error("must not be negative");
      }
      bool saved = true;
      if (auto field = e.OptionalField("saved")) {
        DPLACE_ASSIGN_OR_RETURN(saved, field->Bool());
      }
      builder.AddEdge(endpoints[0], static_cast<int32_t>(output), endpoints[1], saved);
    }
  }
  return builder.Build();
}

Json WriteDplaceGraph(const graph::Graph& g) {
  Json ops = Json::array();
  for (const graph::Op& op : g.ops()) {
    Json j = {{"name", op.name}, {"kind", graph::OpKindName(op.kind)}};
    if (!op.type.empty()) j["type"] = op.type;
    if (!op.time_s.empty()) {
      Json times = Json::object();
      for (const auto& [k, s] : op.time_s) times[k] = s;
      j["time_s"] = times;
    }
    j["flops"] = op.flops;
    j["bytes_accessed"] = op.bytes_accessed;
    j["param_bytes"] = op.param_bytes;
    j["scratch_bytes"] = op.scratch_bytes;
    if (op.saved_bytes > 0) j["saved_bytes"] = op.saved_bytes;
    if (op.saved_bytes_cpu >= 0) j["saved_bytes_cpu"] = op.saved_bytes_cpu;
    // What backward keeps means something for forward ops only.
    if (!op.saves_output && op.kind == graph::OpKind::kForward) j["saves_output"] = false;
    if (op.backward_factor >= 0 && op.kind == graph::OpKind::kForward)
      j["backward_factor"] = op.backward_factor;
    if (op.weight_gradient_share > 0) j["weight_gradient_share"] = op.weight_gradient_share;
    Json outs = Json::array();
    for (int32_t k = 0; k < op.num_outputs; ++k) {
      const graph::Tensor& t = g.tensor(op.first_output + k);
      if (!t.view && t.cpu_bytes < 0) {
        outs.push_back(t.bytes);
        continue;
      }
      Json out = {{"bytes", t.bytes}};
      if (t.cpu_bytes >= 0) out["cpu_bytes"] = t.cpu_bytes;
      if (t.view) {
        out["view_of"] = nullptr;
        if (t.view_of >= 0) {
          const graph::Tensor& b = g.tensor(t.view_of);
          out["view_of"] = {{"op", g.op(b.producer).name}, {"output", b.index}};
        }
      }
      outs.push_back(std::move(out));
    }
    j["outputs"] = outs;
    const double transfer = g.tensor(op.first_output).transfer_time_s;
    if (transfer >= 0) j["transfer_time_s"] = transfer;
    if (op.colocation != graph::kNoGroup) {
      j["colocation"] = g.groups()[op.colocation];
    }
    if (!op.device_kinds.empty()) j["device_kinds"] = op.device_kinds;
    if (op.source_id >= 0) j["source_id"] = op.source_id;
    if (!op.parameters.empty()) j["parameters"] = op.parameters;
    if (!op.shared_parameters.empty()) j["shared_parameters"] = op.shared_parameters;
    ops.push_back(std::move(j));
  }
  Json edges = Json::array();
  for (const graph::Edge& e : g.edges()) {
    Json j = {{"from", g.op(e.from).name}, {"to", g.op(e.to).name}};
    if (e.output != 0) j["output"] = e.output;
    if (!e.saved) j["saved"] = false;
    edges.push_back(std::move(j));
  }
  return {{"format", "dplace-graph/1"}, {"name", g.name()}, {"ops", ops}, {"edges", edges}};
}

}  // namespace dplace::io
