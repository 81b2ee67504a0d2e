// Shape inference where ONNX's own stops: PyTorch exports compute many reshape targets, slice
// bounds, resize sizes and pads from Shape ops at run time (nn.MultiheadAttention, torchvision's
// segmentation heads and detection transforms), and ONNX shape inference (1.12) cannot follow the
// arithmetic. Each pass walks the nodes in order: the op table's kernel evaluates the node's small
// tensors (interpreter.h), its shape rule sizes the output ONNX left unshaped (shape_rules.h), the
// branch an If takes is followed when its condition is computable; what is learnt is written as
// value_info and ONNX shape inference runs again, until nothing new is learnt.
#include "dplace/io/onnx/shapes.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <map>
#include <optional>
#include <string>

#include "dplace/base/isolated.h"
#include "dplace/io/onnx/ops.h"

namespace dplace::io {
namespace {

class Propagator {
 public:
  explicit Propagator(onnx::ModelProto& model) : model_(model) {}

  // One pass: known shapes from the model, values and shapes derived in node order. Returns the
  // number of shapes it added as value_info.
  int Pass() {
    ReadShapes();
    return Walk(*model_.mutable_graph());
  }

 private:
  // Evaluates and sizes the nodes of `g` (the main graph or a taken branch) in order; returns the
  // number of shapes learnt.
  int Walk(onnx::GraphProto& g) {
    int learnt = 0;
    for (auto& node : *g.mutable_node()) {
      const OnnxOp& op = OnnxOpOf(node.op_type());
      if (op.branches) learnt += RunBranch(node);
      Evaluate(node, op);
      if (node.output_size() == 0 || node.output(0).empty() || HasShape(node.output(0))) continue;
      if (auto dims = OutputShape(node, op)) {
        AddShape(g, node.output(0), *dims, ElemType(node, op));
        ++learnt;
        if (op.indices_output && node.output_size() > 1) {
          AddShape(g, node.output(1), *dims, onnx::TensorProto::INT64);
        }
      }
    }
    return learnt;
  }

  void ReadShapes() {
    const onnx::GraphProto& g = model_.graph();
    auto read = [this](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      Dims d;
      for (const auto& dim : v.type().tensor_type().shape().dim()) {
        if (!dim.has_dim_value()) return;
        d.push_back(dim.dim_value());
      }
      known_.shapes[v.name()] = d;
      types_[v.name()] = v.type().tensor_type().elem_type();
    };
    for (const auto& v : g.input()) read(v);
    for (const auto& v : g.value_info()) read(v);
    for (const auto& v : g.output()) read(v);
    for (const auto& node : g.node()) {  // what ONNX inferred inside If branches
      for (const auto& a : node.attribute()) {
        for (const auto& v : a.g().value_info()) read(v);
      }
    }
    for (const auto& t : g.initializer()) {
      known_.shapes[t.name()] = Dims(t.dims().begin(), t.dims().end());
      types_[t.name()] = t.data_type();
      if (auto v = TensorValue(t)) known_.values[t.name()] = *v;
    }
  }

  bool HasShape(const std::string& name) const { return known_.shapes.count(name) > 0; }

  // The element type of the node's first output.
  int ElemType(const onnx::NodeProto& n, const OnnxOp& op) const {
    if (auto it = branch_shapes_.find(n.output(0)); it != branch_shapes_.end()) {
      return it->second.second;
    }
    const NodeInputs in(n, known_);
    switch (op.output_type) {
      case OnnxOutputType::kValueAttr: {
        const onnx::AttributeProto* a = in.Attr("value");
        return a ? a->t().data_type() : onnx::TensorProto::FLOAT;
      }
      case OnnxOutputType::kInt64:
        return onnx::TensorProto::INT64;
      case OnnxOutputType::kCastTo:
        return static_cast<int>(in.IntAttr("to", onnx::TensorProto::FLOAT));
      case OnnxOutputType::kBool:
        return onnx::TensorProto::BOOL;
      case OnnxOutputType::kFirstInput:
      case OnnxOutputType::kSecondInput:
        break;
    }
    const int first = op.output_type == OnnxOutputType::kSecondInput ? 1 : 0;
    if (n.input_size() <= first) return onnx::TensorProto::FLOAT;
    auto it = types_.find(n.input(first));
    return it == types_.end() ? onnx::TensorProto::INT64 : it->second;
  }

  void AddShape(onnx::GraphProto& g, const std::string& name, const Dims& dims, int elem_type) {
    onnx::ValueInfoProto* v = nullptr;
    for (auto& existing : *g.mutable_value_info()) {
      if (existing.name() == name) v = &existing;
    }
    if (v == nullptr) v = g.add_value_info();
    v->Clear();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    known_.shapes[name] = dims;
    types_[name] = elem_type;
  }

  // The branch an If takes when its condition is computable: its nodes are evaluated and sized
  // like the main graph's (names are unique across subgraphs), the shapes learnt are written to
  // the branch's value_info, and its outputs become the If's. Returns the number of shapes learnt.
  int RunBranch(onnx::NodeProto& n) {
    const Value* cond = NodeInputs(n, known_).ValueOf(0);
    if (cond == nullptr || cond->data.size() != 1) return 0;
    const char* taken = cond->data[0] != 0 ? "then_branch" : "else_branch";
    onnx::GraphProto* branch = nullptr;
    for (auto& a : *n.mutable_attribute()) {
      if (a.name() == taken) branch = a.mutable_g();
    }
    if (branch == nullptr || branch->output_size() != n.output_size()) return 0;
    const int learnt = Walk(*branch);
    for (int i = 0; i < n.output_size(); ++i) {
      const std::string& inner = branch->output(i).name();
      if (auto v = known_.values.find(inner); v != known_.values.end()) {
        known_.values[n.output(i)] = v->second;
      }
      if (auto d = known_.shapes.find(inner); d != known_.shapes.end()) {
        branch_shapes_[n.output(i)] = {d->second, types_[inner]};
      }
    }
    return learnt;
  }

  // The value of the node's first output, when small and computable.
  void Evaluate(const onnx::NodeProto& n, const OnnxOp& op) {
    if (n.output_size() == 0 || n.output(0).empty() || !op.kernel) return;
    std::optional<Value> v = op.kernel(NodeInputs(n, known_));
    if (v && Elements(v->dims) <= kMaxElements &&
        static_cast<int64_t>(v->data.size()) == Elements(v->dims)) {
      known_.values[n.output(0)] = std::move(*v);
    }
  }

  // The output shape of a node ONNX could not infer: its value's, its branch's, or its rule's.
  std::optional<Dims> OutputShape(const onnx::NodeProto& n, const OnnxOp& op) const {
    if (auto it = known_.values.find(n.output(0)); it != known_.values.end()) {
      return it->second.dims;
    }
    if (auto it = branch_shapes_.find(n.output(0)); it != branch_shapes_.end()) {
      return it->second.first;
    }
    if (!op.shape) return std::nullopt;
    return op.shape(NodeInputs(n, known_));
  }

  onnx::ModelProto& model_;
  Known known_;
  std::map<std::string, int> types_;
  std::map<std::string, std::pair<Dims, int>> branch_shapes_;  // If outputs: shape, element type
};

Status InferInPlace(onnx::ModelProto& model) {
  onnx::ShapeInferenceOptions options;
  options.check_type = false;
  options.error_mode = 0;
  options.enable_data_propagation = true;
  Propagator propagator(model);
  for (int round = 0; round < 50; ++round) {
    try {
      onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
    } catch (const std::exception& e) {
      std::string what = e.what();
      if (const size_t nl = what.find('\n'); nl != std::string::npos) what.resize(nl);
      return InvalidInput("shape inference failed: " + what);
    }
    if (propagator.Pass() == 0) break;
  }
  return OkStatus();
}

}  // namespace

Status InferOnnxShapes(onnx::ModelProto& model) {
  // libonnx crashes on some malformed models (ValidateOnnxModel catches those known): inference
  // runs in a forked copy of the process, which sends the inferred model back.
  auto inferred = RunIsolated(
      [&model]() -> StatusOr<std::string> {
        DPLACE_RETURN_IF_ERROR(InferInPlace(model));
        return model.SerializeAsString();
      },
      "shape inference",
      {.seconds = 600,
       .on_crash = "the model is malformed in a way the ONNX library does not check"});
  if (!inferred.ok()) return inferred.status();
  if (!model.ParseFromString(*inferred))
    return Internal("shape inference: the result does not parse");
  return OkStatus();
}

}  // namespace dplace::io
