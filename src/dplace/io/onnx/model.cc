#include "dplace/io/onnx/model.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>

#include <map>
#include <set>
#include <unordered_map>

#include "dplace/graph/graph_builder.h"
#include "dplace/graph/modules.h"
#include "dplace/io/onnx/ops.h"
#include "dplace/io/onnx/shapes.h"
#include "dplace/io/onnx/strides.h"
#include "dplace/io/onnx/validate.h"

namespace dplace::io {
namespace {

struct TensorInfo {
  int elem_type = 0;
  std::vector<int64_t> dims;  // -1: unknown
  bool has_shape = false;
};

double ElementBytes(int elem_type) {
  switch (elem_type) {
    case onnx::TensorProto::UINT8:
    case onnx::TensorProto::INT8:
    case onnx::TensorProto::BOOL:
      return 1;
    case onnx::TensorProto::UINT16:
    case onnx::TensorProto::INT16:
    case onnx::TensorProto::FLOAT16:
    case onnx::TensorProto::BFLOAT16:
      return 2;
    case onnx::TensorProto::DOUBLE:
    case onnx::TensorProto::INT64:
    case onnx::TensorProto::UINT64:
    case onnx::TensorProto::COMPLEX64:
      return 8;
    case onnx::TensorProto::COMPLEX128:
      return 16;
    default:
      return 4;
  }
}

TensorInfo FromType(const onnx::TypeProto& type) {
  TensorInfo t;
  if (!type.has_tensor_type()) return t;
  t.elem_type = type.tensor_type().elem_type();
  if (!type.tensor_type().has_shape()) return t;
  t.has_shape = true;
  for (const auto& d : type.tensor_type().shape().dim()) {
    t.dims.push_back(d.has_dim_value() ? d.dim_value() : -1);
  }
  return t;
}

TensorInfo FromTensor(const onnx::TensorProto& tensor) {
  TensorInfo t;
  t.elem_type = tensor.data_type();
  t.has_shape = true;
  t.dims.assign(tensor.dims().begin(), tensor.dims().end());
  return t;
}

double Bytes(const TensorInfo& t) {
  double n = ElementBytes(t.elem_type);
  for (int64_t d : t.dims) n *= static_cast<double>(d > 0 ? d : 1);
  return n;
}

class Importer {
 public:
  Importer(onnx::ModelProto& model, std::string name, FoldedTies ties)
      : model_(model), name_(std::move(name)), ties_(std::move(ties)) {}

  StatusOr<OnnxGraph> Run() {
    const onnx::GraphProto& g = model_.graph();
    for (const auto& init : g.initializer()) {
      tensors_[init.name()] = FromTensor(init);
      parameters_.insert(init.name());
    }
    for (int i = 0; i < g.node_size(); ++i) {
      for (const std::string& in : g.node(i).input()) consumers_[in].push_back({i, 0});
      for (int s = 0; s < g.node(i).input_size(); ++s) {
        consumers_[g.node(i).input(s)].back().second = s;
      }
    }
    for (const auto& input : g.input()) {
      if (parameters_.count(input.name())) continue;
      if (IsParameter(input.name(), 0) || IsFloatScalar(input)) {
        parameters_.insert(input.name());
        tensors_[input.name()] = FromType(input.type());
        continue;
      }
      const TensorInfo t = FromType(input.type());
      if (input.type().has_tensor_type()) {
        const auto& dims = input.type().tensor_type().shape().dim();
        for (int d = 0; d < dims.size(); ++d) {
          if (dims[d].has_dim_value() && dims[d].dim_value() < 0) {
            return InvalidInput("input '" + input.name() + "': dimension " + std::to_string(d) +
                                " is " + std::to_string(dims[d].dim_value()) +
                                ", a size cannot be negative");
          }
        }
      }
      for (size_t d = 0; d < t.dims.size(); ++d) {
        if (t.dims[d] < 0) {
          return InvalidInput("input '" + input.name() + "' has a symbolic dimension " +
                              std::to_string(d) +
                              ": its shapes cannot be inferred; fix it with shapes " +
                              input.name() + "=... or export with fixed sizes");
        }
      }
      if (!t.has_shape) {
        return InvalidInput("input '" + input.name() +
                            "' has no shape: its shapes cannot be "
                            "inferred; export with fixed sizes");
      }
      if (batch_ == 0 && !t.dims.empty()) batch_ = t.dims[0];
    }
    DPLACE_RETURN_IF_ERROR(ValidateOnnxModel(model_));
    DPLACE_RETURN_IF_ERROR(InferOnnxShapes(model_));
    for (const auto* list : {&g.input(), &g.output(), &g.value_info()}) {
      for (const auto& v : *list) {
        if (!parameters_.count(v.name()) || !tensors_.count(v.name())) {
          tensors_[v.name()] = FromType(v.type());
        }
      }
    }
    ReadBranchShapes(g);
    for (const auto& init : g.initializer()) constants_[init.name()] = &init;
    for (const auto& n : g.node()) {
      if (n.op_type() != "Constant" || n.output_size() != 1) continue;
      for (const auto& attr : n.attribute()) {
        if (attr.has_t()) constants_[n.output(0)] = &attr.t();
      }
    }
    return Build();
  }

 private:
  // A floating-point graph input of rank 0: a learned scale or temperature (CLIP's logit_scale read
  // through Exp), never a model's data, which has a batch dimension.
  static bool IsFloatScalar(const onnx::ValueInfoProto& input) {
    if (!input.type().has_tensor_type()) return false;
    const auto& type = input.type().tensor_type();
    const int e = type.elem_type();
    const bool floating = e == onnx::TensorProto::FLOAT || e == onnx::TensorProto::FLOAT16 ||
                          e == onnx::TensorProto::BFLOAT16 || e == onnx::TensorProto::DOUBLE;
    return floating && type.has_shape() && type.shape().dim_size() == 0;
  }

  // A graph input is a parameter unless something reads it as data: the first input of an op
  // other than a gather or an element-wise binary op, or the indices of a gather (looking through
  // pass-through ops). docs/onnx.md.
  bool IsParameter(const std::string& name, int depth) const {
    auto it = consumers_.find(name);
    if (it == consumers_.end()) return true;
    for (const auto& [node_index, slot] : it->second) {
      const onnx::NodeProto& node = model_.graph().node(node_index);
      const OnnxWeightUse use = OnnxOpOf(node.op_type()).weights;
      if (use == OnnxWeightUse::kPassThrough && slot == 0 && depth < 8) {
        for (const std::string& out : node.output()) {
          if (!IsParameter(out, depth + 1)) return false;
        }
        continue;
      }
      if (use == OnnxWeightUse::kGather ? slot == 1
                                        : (slot == 0 && use != OnnxWeightUse::kAnySlot)) {
        return false;
      }
    }
    return true;
  }

  StatusOr<OnnxGraph> Build() {
    const onnx::GraphProto& g = model_.graph();
    graph::GraphBuilder b(name_);
    std::unordered_map<std::string, std::pair<graph::OpId, int>> producer;
    std::set<std::string> names, held;
    std::map<std::string, int> unknown_types;
    int unknown_dims = 0;
    const std::set<std::pair<int, int>> unsaved = DecomposedFunctionInputs();
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& node = g.node(i);
      const OnnxOp& info = OnnxOpOf(node.op_type());
      auto requires_grad = [&](int slot) { return RequiresGrad(node.input(slot)); };
      bool differentiable = false;
      for (int s = 0; s < node.input_size(); ++s)
        differentiable = differentiable || requires_grad(s);
      differentiable = differentiable && info.differentiable;
      if (differentiable) {
        for (const std::string& out : node.output()) requires_grad_.insert(out);
      }
      const OnnxSaved& saved = info.saved;
      const bool view = IsView(node, info.view);
      if (!view && info.pointwise) NotePointwiseStrides(node);
      const auto base = view ? producer.find(node.input(0)) : producer.end();
      // A Cast to the type a computed tensor has is PyTorch's .to returning the tensor itself: the
      // exporter then reads every later use of that tensor from the Cast (T5's residual reads
      // its LayerNorm's `hidden_states.to(torch.float32)`). It is no op: its output is its input.
      if (view && info.view == OnnxView::kSameType && base != producer.end() &&
          node.output_size() == 1) {
        producer[node.output(0)] = base->second;
        continue;
      }
      graph::Op op;
      op.name = node.name().empty() ? node.op_type() + "_" + std::to_string(i) : node.name();
      while (!names.insert(op.name).second) op.name += "#" + std::to_string(i);
      op.type = node.op_type();
      OnnxNodeShapes shapes = ShapesOf(node);
      shapes.outputs.clear();  // filled below, with the fallback for unknown op types
      const Branches branches = SummariseBranches(node);
      double in_bytes = 0;
      for (int s = 0; s < node.input_size(); ++s) {
        const TensorInfo* t = Find(node.input(s));
        if (t == nullptr) continue;
        in_bytes += Bytes(*t);
        // A parameter read by several nodes (an unrolled RNN's weights, a tied weight, also one
        // the exporter folded into a transposed copy) is held by the first.
        if (!parameters_.count(node.input(s))) continue;
        const auto tie = ties_.find(node.input(s));
        const std::string& in = tie != ties_.end() ? tie->second : node.input(s);
        if (held.insert(in).second) {
          op.param_bytes += Bytes(*t);
          op.parameters.push_back(FoldedWeightName(in, node, s, op.name, *t));
        } else {
          op.shared_parameters.push_back(in);
        }
      }
      std::vector<graph::TensorSpec> outputs;
      double out_bytes = 0, out_elements = 0;
      for (int o = 0; o < node.output_size(); ++o) {
        const std::string& out = node.output(o);
        TensorInfo t;
        if (const TensorInfo* found = Find(out); found != nullptr && found->has_shape) {
          t = *found;
        } else if (const TensorInfo* scale = Find(node.input_size() > 1 ? node.input(1) : "");
                   node.op_type() == "BatchNormalization" && o > 0 && scale != nullptr) {
          // Training mode's running and batch statistics (opsets 9-13 leave them unshaped).
          t = *scale;
        } else if (!out.empty() && node.op_type() != "Constant") {
          // An op ONNX does not know: its outputs are taken to be shaped like its first input.
          const bool known =
              onnx::OpSchemaRegistry::Schema(node.op_type(), Opset(node.domain()), node.domain());
          const TensorInfo* first = node.input_size() > 0 ? Find(node.input(0)) : nullptr;
          if (known || first == nullptr) {
            return InvalidInput("node '" + op.name + "' (" + node.op_type() + "): the shape of " +
                                "its output '" + out + "' cannot be inferred");
          }
          t = *first;
        } else if (node.op_type() == "Constant") {
          for (const auto& attr : node.attribute()) {
            if (attr.has_t()) t = FromTensor(attr.t());
          }
        }
        for (int64_t d : t.dims) unknown_dims += d < 0;
        shapes.outputs.push_back(t.dims);
        const bool in_graph = base != producer.end();
        outputs.push_back({.bytes = out.empty() ? 0 : Bytes(t),
                           .view = view,
                           .view_of_op = in_graph ? base->second.first : graph::OpId(-1),
                           .view_of_output = in_graph ? base->second.second : 0});
        out_bytes += out.empty() ? 0 : Bytes(t);
        out_elements += out.empty() ? 0 : Bytes(t) / ElementBytes(t.elem_type);
      }
      double flops = info.branches ? branches.flops : OnnxNodeFlops(shapes);
      if (flops < 0) {
        ++unknown_types[node.op_type()];
        flops = out_elements;
      }
      op.flops = flops;
      op.bytes_accessed = in_bytes + out_bytes;
      op.saves_output = differentiable && saved.output && !unsaved.count({i, -1});
      op.backward_factor = BackwardFactor(info, node, differentiable);
      // Max pooling's backward keeps the argmax indices (int64, shaped like the output) besides
      // its input.
      if (differentiable && node.op_type() == "MaxPool" && node.output_size() == 1)
        op.saved_bytes = out_elements * 8;
      // Training-mode dropout keeps its mask: on a GPU one byte per element (CUDA's
      // native_dropout), on a CPU the scaled noise, shaped and typed like its output.
      if (differentiable && node.op_type() == "Dropout" && Trains(node) &&
          !shapes.outputs.empty()) {
        double elements = 1;
        for (int64_t d : shapes.outputs[0])
          elements *= static_cast<double>(std::max<int64_t>(d, 1));
        op.saved_bytes = elements;
        op.saved_bytes_cpu = outputs[0].bytes;
      }
      const graph::OpId id = b.AddOp(std::move(op), std::move(outputs));
      for (int o = 0; o < node.output_size(); ++o) {
        if (!node.output(o).empty()) producer[node.output(o)] = {id, o};
      }
      for (int s = 0; s < node.input_size(); ++s) {
        auto it = producer.find(node.input(s));
        if (it == producer.end()) continue;
        const bool keep = differentiable && !unsaved.count({i, s}) &&
                          saved.Input(s, node.input_size(), requires_grad);
        b.AddEdge(it->second.first, it->second.second, id, keep);
      }
      for (const std::string& in : branches.outer_inputs) {
        auto it = producer.find(in);
        if (it != producer.end()) b.AddEdge(it->second.first, it->second.second, id);
      }
    }
    OnnxGraph out;
    DPLACE_ASSIGN_OR_RETURN(out.graph, b.Build());
    out.batch = batch_;
    std::map<int, double> float_bytes;  // elem type -> bytes of the tensors of that type
    for (const auto& [name, t] : tensors_) {
      if (t.elem_type == onnx::TensorProto::FLOAT || t.elem_type == onnx::TensorProto::FLOAT16 ||
          t.elem_type == onnx::TensorProto::BFLOAT16) {
        float_bytes[t.elem_type] += Bytes(t);
      }
    }
    const auto most = std::max_element(float_bytes.begin(), float_bytes.end(),
                                       [](auto& x, auto& y) { return x.second < y.second; });
    if (most != float_bytes.end() && most->first == onnx::TensorProto::FLOAT16)
      out.precision = graph::Precision::kFp16;
    if (most != float_bytes.end() && most->first == onnx::TensorProto::BFLOAT16)
      out.precision = graph::Precision::kBf16;
    for (const auto& [type, count] : unknown_types) {
      out.warnings.push_back("op type '" + type + "' (" + std::to_string(count) +
                             " nodes) has no FLOPs formula: estimated as one FLOP per output "
                             "element");
    }
    if (!recovered_.empty()) {
      out.warnings.push_back(
          std::to_string(recovered_.size()) +
          " weights were folded by the exporter (onnx::MatMul_...) and named after their modules "
          "(e.g. '" +
          *recovered_.begin() + "')" +
          (recovered_without_values_ > 0
               ? std::string("; without their values in the file (export_params=False) a tied "
                             "weight folded this way counts twice: export with "
                             "torch.onnx.export(..., do_constant_folding=False)")
               : std::string()));
    }
    if (unknown_dims > 0) {
      out.warnings.push_back(std::to_string(unknown_dims) +
                             " tensor dimensions could not be inferred and were taken as 1");
    }
    return out;
  }

  // Whether the node's outputs are views of its first input, as PyTorch makes them: a Cast to the
  // type it has is a view, and a Reshape whose strides no view can have (of an expanded or
  // transposed tensor) is a copy. Notes the strides of each view output.
  bool IsView(const onnx::NodeProto& node, OnnxView kind) {
    if (kind == OnnxView::kNone || node.input_size() == 0) return false;
    const TensorInfo* in = Find(node.input(0));
    if (in == nullptr || !in->has_shape) return kind != OnnxView::kSameType;
    const auto known = strides_.find(node.input(0));
    const Strides strides = known != strides_.end() ? known->second : ContiguousStrides(in->dims);
    for (const std::string& name : node.output()) {
      const TensorInfo* out = Find(name);
      if (out == nullptr || !out->has_shape) return kind != OnnxView::kSameType;
      std::optional<Strides> view;
      switch (kind) {
        case OnnxView::kNone:
          return false;
        case OnnxView::kSame:
        case OnnxView::kSlice:  // steps other than 1 are rare: strides kept
          view = strides;
          break;
        case OnnxView::kSameType:
          if (out->elem_type != in->elem_type) return false;
          view = strides;
          break;
        case OnnxView::kReshape:
          view = ReshapedStrides(in->dims, strides, out->dims);
          break;
        case OnnxView::kPermute:
          view = PermutedStrides(strides, IntsAttribute(node, "perm"));
          break;
        case OnnxView::kBroadcast:
          view = ExpandedStrides(in->dims, strides, out->dims);
          break;
      }
      if (!view) return false;
      if (view->size() != out->dims.size()) view = ContiguousStrides(out->dims);
      strides_[name] = *std::move(view);
    }
    return true;
  }

  // Notes the strides of a pointwise op's output where its operands lay it out otherwise than
  // row-major (the tanh of a transposed tensor: a reshape merging the heads back is then a view).
  void NotePointwiseStrides(const onnx::NodeProto& node) {
    const TensorInfo* out = node.output_size() > 0 ? Find(node.output(0)) : nullptr;
    if (out == nullptr || !out->has_shape) return;
    std::vector<StridedOperand> operands;
    bool strided = false;
    for (const std::string& input : node.input()) {
      const TensorInfo* in = Find(input);
      if (in == nullptr || !in->has_shape) continue;
      const auto known = strides_.find(input);
      strided = strided || known != strides_.end();
      operands.push_back(
          {in->dims, known != strides_.end() ? known->second : ContiguousStrides(in->dims)});
    }
    if (!strided) return;
    Strides strides = PointwiseStrides(out->dims, operands);
    if (strides != ContiguousStrides(out->dims)) strides_[node.output(0)] = std::move(strides);
  }

  static std::vector<int64_t> IntsAttribute(const onnx::NodeProto& node, const char* name) {
    for (const auto& attr : node.attribute()) {
      if (attr.name() == name) return {attr.ints().begin(), attr.ints().end()};
    }
    return {};
  }

  // A parameter's state_dict name. torch.onnx's constant folding (do_constant_folding=True)
  // replaces an nn.Linear's transposed weight by a new tensor named "onnx::MatMul_NNN"; read by a
  // MatMul in module scope M, that is M's weight, "M.weight" (unless a parameter has that name).
  // Each recovered name is noted for the import's warning. Other names are kept.
  std::string FoldedWeightName(const std::string& name, const onnx::NodeProto& node, int slot,
                               const std::string& op_name, const TensorInfo& t) {
    if (name.rfind("onnx::", 0) != 0 || slot != 1 || node.op_type() != "MatMul" ||
        t.dims.size() != 2) {
      return name;
    }
    const std::string module = graph::ModulePath(op_name);
    if (module.empty()) return name;
    std::string weight = module + ".weight";
    if (parameters_.count(weight) || !recovered_.insert(weight).second) return name;
    if (!constants_.count(name)) ++recovered_without_values_;
    return weight;
  }

  // Whether a Dropout runs in training mode: its training_mode input (opset 12 on) is true, a
  // constant as torch.onnx exports it with TrainingMode.TRAINING, or is not constant.
  bool Trains(const onnx::NodeProto& node) const {
    if (node.input_size() < 3 || node.input(2).empty()) return false;
    const auto it = constants_.find(node.input(2));
    if (it == constants_.end()) return true;
    const onnx::TensorProto& value = *it->second;
    if (!value.raw_data().empty()) return value.raw_data()[0] != 0;
    if (value.int32_data_size() > 0) return value.int32_data(0) != 0;
    return false;
  }

  // The backward's work over the forward's (graph::Op::backward_factor): a GEMM-like op one GEMM
  // per operand that needs a gradient, its data (input 0) and its weights (any other input,
  // wherever it comes from: a parameter read directly or through Transpose or Cast, a tied weight);
  // another op once when it is differentiable, not at all otherwise.
  double BackwardFactor(const OnnxOp& info, const onnx::NodeProto& node,
                        bool differentiable) const {
    if (!differentiable) return 0;
    if (!info.gemm) return 1;
    bool weights = false;
    for (int s = 1; s < node.input_size(); ++s) weights = weights || RequiresGrad(node.input(s));
    return (node.input_size() > 0 && RequiresGrad(node.input(0)) ? 1 : 0) + (weights ? 1 : 0);
  }

  // A value requires a gradient when it is a parameter or computed from one (RequiresGrad's set
  // grows as Build() walks the nodes in order).
  bool RequiresGrad(const std::string& name) const {
    return parameters_.count(name) > 0 || requires_grad_.count(name) > 0;
  }

  // (node, input slot) pairs the table would keep but PyTorch does not, inside functions that
  // torch.onnx decomposes (docs/onnx.md):
  //   GELU   Div(x, c) -> Erf -> Add(., 1) -> Mul(x, .) -> Mul(., 0.5): PyTorch keeps only x, so
  //          Erf keeps nothing and the Mul keeps x, not Erf's branch;
  //   LayerNorm  d = Sub(x, ReduceMean(x)); Pow(d, 2) -> ReduceMean -> ... -> Sqrt -> Div(d, std)
  //          -> Mul(., w): PyTorch keeps x (here d) and two small statistics, so Pow, both
  //          ReduceMeans and the scale Mul keep nothing;
  //   mean   ReduceMean without axes (x.mean()) keeps nothing, as MeanBackward0 keeps sizes only.
  //   SiLU   Mul(x, Sigmoid(x)), and Mish  Mul(x, Tanh(Softplus(x))): PyTorch keeps only x, so the
  //          Sigmoid (Tanh) keeps not its result and the Mul not the Sigmoid's (Tanh's).
  // A pair (node, -1) says that the node's backward does not keep its output.
  std::set<std::pair<int, int>> DecomposedFunctionInputs() const {
    const onnx::GraphProto& g = model_.graph();
    std::unordered_map<std::string, int> made_by;
    for (int i = 0; i < g.node_size(); ++i) {
      for (const std::string& out : g.node(i).output()) made_by[out] = i;
    }
    auto maker = [&](const std::string& name) -> const onnx::NodeProto* {
      auto it = made_by.find(name);
      return it == made_by.end() ? nullptr : &g.node(it->second);
    };
    auto is = [](const onnx::NodeProto* n, const char* type) {
      return n != nullptr && n->op_type() == type;
    };
    std::set<std::pair<int, int>> out;
    for (int i = 0; i < g.node_size(); ++i) {
      const onnx::NodeProto& node = g.node(i);
      // x.mean() over every dimension keeps nothing (torch 1.13's mean(dim) keeps its input).
      if (node.op_type() == "ReduceMean" && node.input_size() == 1 &&
          std::none_of(node.attribute().begin(), node.attribute().end(),
                       [](const onnx::AttributeProto& a) { return a.name() == "axes"; })) {
        out.insert({i, 0});
      }
      if (node.op_type() != "Mul" || node.input_size() != 2) continue;
      for (int s = 0; s < 2; ++s) {
        const onnx::NodeProto* add = maker(node.input(s));
        const onnx::NodeProto* erf = is(add, "Add") ? maker(add->input(0)) : nullptr;
        if (is(add, "Add") && !is(erf, "Erf")) erf = maker(add->input(1));
        const onnx::NodeProto* div = is(erf, "Erf") ? maker(erf->input(0)) : nullptr;
        if (is(div, "Div") && div->input(0) == node.input(1 - s)) {  // GELU
          out.insert({made_by[erf->output(0)], 0});
          out.insert({i, s});
        }
        const onnx::NodeProto* gate = maker(node.input(s));
        const onnx::NodeProto* softplus = is(gate, "Tanh") ? maker(gate->input(0)) : nullptr;
        const bool silu = is(gate, "Sigmoid") && gate->input(0) == node.input(1 - s);
        const bool mish = is(softplus, "Softplus") && softplus->input(0) == node.input(1 - s);
        if (silu || mish) {
          out.insert({made_by[gate->output(0)], -1});
          out.insert({i, s});
        }
        const onnx::NodeProto* norm = maker(node.input(s));
        const onnx::NodeProto* centred = is(norm, "Div") ? maker(norm->input(0)) : nullptr;
        const onnx::NodeProto* mean = is(centred, "Sub") ? maker(centred->input(1)) : nullptr;
        // LayerNorm's scale: F.layer_norm normalises the trailing dimensions; a norm written out
        // over others (ConvNeXt's channels-first LayerNorm: mean(1)) is ops PyTorch runs and
        // keeps one by one.
        if (parameters_.count(node.input(1 - s)) && is(mean, "ReduceMean") &&
            OverTrailingAxes(*mean)) {
          out.insert({i, s});
          out.insert({made_by[mean->output(0)], 0});
          for (int j = 0; j < g.node_size(); ++j) {
            if (g.node(j).op_type() != "Pow" || g.node(j).input(0) != norm->input(0)) continue;
            out.insert({j, 0});
            for (int k = 0; k < g.node_size(); ++k) {
              if (g.node(k).op_type() == "ReduceMean" && g.node(k).input(0) == g.node(j).output(0))
                out.insert({k, 0});
            }
          }
        }
      }
    }
    return out;
  }

  // Whether a ReduceMean reduces the last dimensions of its input, as a LayerNorm does (axes
  // -1..-k, or rank-k..rank-1).
  bool OverTrailingAxes(const onnx::NodeProto& mean) const {
    const std::vector<int64_t> axes = IntsAttribute(mean, "axes");
    const TensorInfo* in = Find(mean.input(0));
    if (axes.empty() || in == nullptr || !in->has_shape) return false;
    const auto rank = static_cast<int64_t>(in->dims.size());
    std::set<int64_t> normalised;
    for (int64_t a : axes) normalised.insert(a < 0 ? a + rank : a);
    return !normalised.empty() && *normalised.rbegin() == rank - 1 &&
           *normalised.begin() == rank - static_cast<int64_t>(normalised.size());
  }

  int Opset(const std::string& domain) const {
    for (const auto& o : model_.opset_import()) {
      if (o.domain() == domain || (domain.empty() && o.domain() == "ai.onnx")) {
        return static_cast<int>(o.version());
      }
    }
    return 1;
  }

  // Shapes inside If branches (names are unique across subgraphs), for costing their nodes.
  void ReadBranchShapes(const onnx::GraphProto& g) {
    for (const auto& node : g.node()) {
      for (const auto& attr : node.attribute()) {
        if (!attr.has_g()) continue;
        for (const auto& v : attr.g().value_info())
          tensors_.try_emplace(v.name(), FromType(v.type()));
        ReadBranchShapes(attr.g());
      }
    }
  }

  // A node's attributes and tensor shapes as the FLOPs formulas take them (unknown: empty).
  OnnxNodeShapes ShapesOf(const onnx::NodeProto& node) const {
    OnnxNodeShapes shapes{.op_type = node.op_type()};
    for (const auto& attr : node.attribute()) {
      if (attr.name() == "kernel_shape")
        shapes.kernel_shape.assign(attr.ints().begin(), attr.ints().end());
      if (attr.name() == "group") shapes.group = attr.i();
      if (attr.name() == "transA") shapes.trans_a = attr.i();
      if (attr.name() == "transB") shapes.trans_b = attr.i();
    }
    for (const auto* names : {&node.input(), &node.output()}) {
      auto& dims = names == &node.input() ? shapes.inputs : shapes.outputs;
      for (const std::string& name : *names) {
        const TensorInfo* t = Find(name);
        dims.push_back(t != nullptr ? t->dims : std::vector<int64_t>());
      }
    }
    return shapes;
  }

  // What an If's branches read from the enclosing graph (its implicit inputs, which become edges)
  // and the FLOPs of the costlier branch, its nodes costed like the main graph's (docs/onnx.md).
  struct Branches {
    google::protobuf::RepeatedPtrField<std::string> outer_inputs;
    double flops = 0;
  };
  Branches SummariseBranches(const onnx::NodeProto& node) const {
    Branches out;
    std::set<std::string> outer;
    for (const auto& attr : node.attribute()) {
      if (!attr.has_g()) continue;
      std::set<std::string> produced;
      out.flops = std::max(out.flops, BranchFlops(attr.g(), produced, outer));
    }
    for (const std::string& name : outer) *out.outer_inputs.Add() = name;
    return out;
  }
  double BranchFlops(const onnx::GraphProto& g, std::set<std::string>& produced,
                     std::set<std::string>& outer) const {
    double flops = 0;
    for (const auto& node : g.node()) {
      for (const std::string& in : node.input()) {
        if (!in.empty() && !produced.count(in)) outer.insert(in);
      }
      produced.insert(node.output().begin(), node.output().end());
      const Branches inner = SummariseBranches(node);
      outer.insert(inner.outer_inputs.begin(), inner.outer_inputs.end());
      const double f =
          OnnxOpOf(node.op_type()).branches ? inner.flops : OnnxNodeFlops(ShapesOf(node));
      flops += std::max(f, 0.0);
    }
    return flops;
  }

  const TensorInfo* Find(const std::string& name) const {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? nullptr : &it->second;
  }

  onnx::ModelProto& model_;
  std::string name_;
  std::unordered_map<std::string, TensorInfo> tensors_;
  std::set<std::string> parameters_;
  std::set<std::string> requires_grad_;
  std::unordered_map<std::string, Strides> strides_;  // of the views made so far
  FoldedTies ties_;                                   // folded copies of tied weights (FoldedTies)
  int recovered_without_values_ = 0;  // of them, folded weights the file holds no values of
  std::set<std::string> recovered_;   // state_dict names given to folded weights
  // The value of each initializer and Constant node output, by name (a Dropout's mode).
  std::unordered_map<std::string, const onnx::TensorProto*> constants_;
  int64_t batch_ = 0;
  std::unordered_map<std::string, std::vector<std::pair<int, int>>> consumers_;
};

}  // namespace

StatusOr<OnnxGraph> ReadOnnxModel(const std::string& bytes, const std::string& name,
                                  const InputShapes& shapes, const FoldedTies* ties) {
  onnx::ModelProto model;
  if (!model.ParseFromString(bytes)) {
    return InvalidInput("not an ONNX model (protobuf parse failed: truncated or another format)");
  }
  if (model.ir_version() <= 0 || !model.has_graph() || model.graph().node_size() == 0) {
    return InvalidInput("not an ONNX model (no IR version or no graph nodes)");
  }
  FoldedTies tied = ties != nullptr ? *ties : FindFoldedTies(bytes);
  // Weights are never read (only their shapes): dropping their values keeps shape inference, which
  // copies the model, as fast on an export with weights as on its weight-free twin. Integer
  // tensors stay: shape inference reads shapes and indices from them.
  for (onnx::TensorProto& t : *model.mutable_graph()->mutable_initializer()) {
    const int type = t.data_type();
    const bool floating = type == onnx::TensorProto::FLOAT || type == onnx::TensorProto::FLOAT16 ||
                          type == onnx::TensorProto::BFLOAT16 || type == onnx::TensorProto::DOUBLE;
    if (!floating) continue;
    double elements = 1;  // a double: dims from a hostile file may multiply past any integer
    for (int64_t d : t.dims()) elements *= static_cast<double>(std::max<int64_t>(d, 1));
    if (elements <= 64) continue;
    t.clear_raw_data();
    t.clear_float_data();
    t.clear_double_data();
    t.clear_int32_data();
  }
  if (!shapes.empty()) {
    // New input sizes make the shapes the exporter recorded (a fixed-shape export's intermediate
    // and output sizes) stale: shape inference infers them again from the inputs.
    model.mutable_graph()->clear_value_info();
    for (onnx::ValueInfoProto& v : *model.mutable_graph()->mutable_output()) {
      v.mutable_type()->mutable_tensor_type()->clear_shape();
    }
  }
  for (const auto& [input, dims] : shapes) {
    onnx::ValueInfoProto* found = nullptr;
    std::string names;
    for (onnx::ValueInfoProto& v : *model.mutable_graph()->mutable_input()) {
      if (v.name() == input) found = &v;
      names += (names.empty() ? "" : ", ") + v.name();
    }
    if (found == nullptr) {
      return InvalidInput("shapes: the model has no input '" + input + "' (inputs: " + names + ")");
    }
    auto* shape = found->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->clear_dim();
    for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  }
  Importer importer(model, name, std::move(tied));
  auto graph = importer.Run();
  if (!graph.ok() && !shapes.empty()) {
    return InvalidInput(std::string(graph.status().message()) +
                        " after the new input sizes (the export fixed sizes that depend on them: "
                        "export with dynamic axes, torch.onnx.export(..., dynamic_axes=...), to "
                        "resize it with shapes NAME=DIMS)");
  }
  return graph;
}

}  // namespace dplace::io
