#include "dplace/io/onnx/validate.h"

#include <onnx/defs/schema.h>

#include <map>
#include <set>
#include <string>

#include "dplace/io/onnx/ops.h"

namespace dplace::io {
namespace {

std::string NodeLabel(const onnx::NodeProto& node, int index) {
  const std::string name = node.name().empty() ? "#" + std::to_string(index) : node.name();
  return "node '" + name + "' (" + node.op_type() + ")";
}

// Ranks of the tensors whose shape the file states (graph inputs, initializers, value_info).
std::map<std::string, int> KnownRanks(const onnx::GraphProto& g) {
  std::map<std::string, int> ranks;
  for (const auto& init : g.initializer()) ranks[init.name()] = init.dims_size();
  for (const auto* list : {&g.input(), &g.value_info()}) {
    for (const auto& v : *list) {
      if (v.type().has_tensor_type() && v.type().tensor_type().has_shape()) {
        ranks.try_emplace(v.name(), v.type().tensor_type().shape().dim_size());
      }
    }
  }
  return ranks;
}

Status CheckAttributes(const onnx::NodeProto& node, const std::string& label) {
  for (const auto& attr : node.attribute()) {
    const std::string& name = attr.name();
    if (name == "strides" || name == "dilations" || name == "kernel_shape") {
      for (int64_t v : attr.ints()) {
        if (v < 1)
          return InvalidInput(label + ": " + name + " must be at least 1, not " +
                              std::to_string(v));
      }
    }
    if (name == "pads") {
      for (int64_t v : attr.ints()) {
        if (v < 0) return InvalidInput(label + ": pads must not be negative");
      }
    }
    if (name == "group" && attr.i() < 1) {
      return InvalidInput(label + ": group must be at least 1, not " + std::to_string(attr.i()));
    }
  }
  return OkStatus();
}

Status CheckRanks(const onnx::NodeProto& node, const std::string& label,
                  const std::map<std::string, int>& ranks) {
  auto rank = [&](int slot) {
    if (slot >= node.input_size()) return -1;
    auto it = ranks.find(node.input(slot));
    return it == ranks.end() ? -1 : it->second;
  };
  const OnnxRanks ranks_needed = OnnxOpOf(node.op_type()).ranks;
  if (ranks_needed == OnnxRanks::kSpatial || ranks_needed == OnnxRanks::kSpatialWithWeight) {
    if (rank(0) >= 0 && rank(0) < 3) {
      return InvalidInput(label + ": its input has rank " + std::to_string(rank(0)) +
                          ", needs at least 3 (batch, channels, spatial)");
    }
    if (ranks_needed == OnnxRanks::kSpatialWithWeight && rank(1) >= 0 &&
        (rank(1) < 3 || (rank(0) >= 0 && rank(1) != rank(0)))) {
      return InvalidInput(label + ": its weight has rank " + std::to_string(rank(1)) +
                          ", the input's rank (at least 3) is needed");
    }
  }
  if (ranks_needed == OnnxRanks::kSequence) {
    for (int slot = 0; slot < 3; ++slot) {
      if (rank(slot) >= 0 && rank(slot) != 3) {
        return InvalidInput(label + ": input " + std::to_string(slot) + " has rank " +
                            std::to_string(rank(slot)) + ", needs 3");
      }
    }
  }
  return OkStatus();
}

}  // namespace

Status ValidateOnnxModel(const onnx::ModelProto& model) {
  const auto& range = onnx::OpSchemaRegistry::DomainToVersionRange::Instance().Map();
  const int newest = range.count(onnx::ONNX_DOMAIN) ? range.at(onnx::ONNX_DOMAIN).second : 1;
  for (const auto& opset : model.opset_import()) {
    if (!opset.domain().empty() && opset.domain() != "ai.onnx") continue;
    if (opset.version() < 1 || opset.version() > newest) {
      return InvalidInput("opset " + std::to_string(opset.version()) +
                          " of the default domain: this build knows opsets 1 to " +
                          std::to_string(newest));
    }
  }
  const onnx::GraphProto& g = model.graph();
  const std::map<std::string, int> ranks = KnownRanks(g);
  std::set<std::string> produced;
  for (const auto& init : g.initializer()) produced.insert(init.name());
  for (const auto& input : g.input()) produced.insert(input.name());
  int opset = 1;
  for (const auto& o : model.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") opset = static_cast<int>(o.version());
  }
  for (int i = 0; i < g.node_size(); ++i) {
    const onnx::NodeProto& node = g.node(i);
    const std::string label = NodeLabel(node, i);
    for (const std::string& out : node.output()) {
      if (!out.empty() && !produced.insert(out).second) {
        return InvalidInput(label + ": its output '" + out + "' is already produced elsewhere");
      }
    }
    DPLACE_RETURN_IF_ERROR(CheckAttributes(node, label));
    DPLACE_RETURN_IF_ERROR(CheckRanks(node, label, ranks));
    const onnx::OpSchema* schema =
        onnx::OpSchemaRegistry::Schema(node.op_type(), opset, node.domain());
    if (schema == nullptr) continue;
    if (node.input_size() < schema->min_input()) {
      return InvalidInput(label + ": has " + std::to_string(node.input_size()) +
                          " inputs, needs at least " + std::to_string(schema->min_input()));
    }
    const auto& formals = schema->inputs();
    for (int s = 0; s < node.input_size() && s < static_cast<int>(formals.size()); ++s) {
      if (node.input(s).empty() &&
          formals[static_cast<size_t>(s)].GetOption() == onnx::OpSchema::Single) {
        return InvalidInput(label + ": its required input " + std::to_string(s) + " ('" +
                            formals[static_cast<size_t>(s)].GetName() + "') is missing");
      }
    }
  }
  return OkStatus();
}

}  // namespace dplace::io
