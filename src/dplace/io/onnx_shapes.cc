// Shape inference where ONNX's own stops: PyTorch exports compute many reshape targets and slice
// bounds from Shape ops at run time (nn.MultiheadAttention, torchvision's detection heads), and
// ONNX shape inference (1.12) cannot follow the arithmetic. This evaluates the small integer
// tensors of those computations (Shape, Constant, Gather, Concat, Slice, Unsqueeze, Squeeze, Cast,
// Add, Sub, Mul, Div, Equal, Where, Range, ConstantOfShape, ReduceProd; integers only), derives the
// output shapes of Reshape, Expand, Slice, Tile, Range, ConstantOfShape and Resize (given sizes)
// from them, writes those as value_info and runs ONNX shape inference again, until nothing new is
// learnt.
#include "dplace/io/onnx_shapes.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>

namespace dplace::io {
namespace {

using Values = std::vector<int64_t>;
using Dims = std::vector<int64_t>;

std::optional<Values> TensorValues(const onnx::TensorProto& t) {
  int64_t n = 1;
  for (int64_t d : t.dims()) n *= d;
  if (n > 64) return std::nullopt;  // shape arithmetic only
  Values v;
  if (t.data_type() != onnx::TensorProto::INT64 && t.data_type() != onnx::TensorProto::INT32) {
    return std::nullopt;
  }
  if (t.int64_data_size() > 0) return Values(t.int64_data().begin(), t.int64_data().end());
  if (t.int32_data_size() > 0) return Values(t.int32_data().begin(), t.int32_data().end());
  if (t.has_raw_data()) {
    const std::string& raw = t.raw_data();
    if (t.data_type() == onnx::TensorProto::INT64) {
      v.resize(raw.size() / 8);
      std::memcpy(v.data(), raw.data(), v.size() * 8);
      return v;
    }
    if (t.data_type() == onnx::TensorProto::INT32) {
      std::vector<int32_t> w(raw.size() / 4);
      std::memcpy(w.data(), raw.data(), w.size() * 4);
      return Values(w.begin(), w.end());
    }
  }
  return std::nullopt;  // floating-point values are not shape arithmetic: never truncated
}

int64_t IntAttr(const onnx::NodeProto& node, const char* name, int64_t fallback) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

int64_t Clamp(int64_t i, int64_t n, bool end) {
  if (i < 0) i += n;
  return std::clamp<int64_t>(i, 0, end ? n : n - 1);
}

class Propagator {
 public:
  explicit Propagator(onnx::ModelProto& model) : model_(model) {}

  // One pass: known shapes from the model, values and shapes derived in node order. Returns the
  // number of shapes it added as value_info.
  int Pass() {
    ReadShapes();
    int added = 0;
    for (const auto& node : model_.graph().node()) {
      Evaluate(node);
      if (node.output_size() == 0 || node.output(0).empty() || Known(node.output(0))) continue;
      if (auto dims = OutputShape(node)) {
        AddShape(node.output(0), *dims, ElemType(node));
        ++added;
      }
    }
    return added;
  }

 private:
  void ReadShapes() {
    const onnx::GraphProto& g = model_.graph();
    auto read = [this](const onnx::ValueInfoProto& v) {
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) return;
      Dims d;
      for (const auto& dim : v.type().tensor_type().shape().dim()) {
        if (!dim.has_dim_value()) return;
        d.push_back(dim.dim_value());
      }
      shapes_[v.name()] = d;
      types_[v.name()] = v.type().tensor_type().elem_type();
    };
    for (const auto& v : g.input()) read(v);
    for (const auto& v : g.value_info()) read(v);
    for (const auto& v : g.output()) read(v);
    for (const auto& t : g.initializer()) {
      shapes_[t.name()] = Dims(t.dims().begin(), t.dims().end());
      if (auto v = TensorValues(t)) values_[t.name()] = *v;
    }
  }

  bool Known(const std::string& name) const { return shapes_.count(name) > 0; }
  const Values* Value(const onnx::NodeProto& n, int i) const {
    if (i >= n.input_size()) return nullptr;
    auto it = values_.find(n.input(i));
    return it == values_.end() ? nullptr : &it->second;
  }
  const Dims* Shape(const onnx::NodeProto& n, int i) const {
    if (i >= n.input_size()) return nullptr;
    auto it = shapes_.find(n.input(i));
    return it == shapes_.end() ? nullptr : &it->second;
  }
  // The element type of the node's first output: ConstantOfShape's is its value's (float by
  // default); the others keep their first input's.
  int ElemType(const onnx::NodeProto& n) const {
    if (n.op_type() == "ConstantOfShape") {
      for (const auto& a : n.attribute()) {
        if (a.has_t()) return a.t().data_type();
      }
      return onnx::TensorProto::FLOAT;
    }
    if (n.input_size() == 0) return onnx::TensorProto::FLOAT;
    auto it = types_.find(n.input(0));
    return it == types_.end() ? onnx::TensorProto::INT64 : it->second;
  }

  void AddShape(const std::string& name, const Dims& dims, int elem_type) {
    onnx::ValueInfoProto* v = nullptr;
    for (auto& existing : *model_.mutable_graph()->mutable_value_info()) {
      if (existing.name() == name) v = &existing;
    }
    if (v == nullptr) v = model_.mutable_graph()->add_value_info();
    v->Clear();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    for (int64_t d : dims) t->mutable_shape()->add_dim()->set_dim_value(d);
    shapes_[name] = dims;
    types_[name] = elem_type;
  }

  // Slice of a 1-D value or of dims along one axis: [start, end) step.
  static Values SliceRange(const Values& v, int64_t start, int64_t end, int64_t step) {
    const auto n = static_cast<int64_t>(v.size());
    Values out;
    if (step > 0) {
      for (int64_t i = Clamp(start, n, true); i < Clamp(end, n, true); i += step) {
        out.push_back(v[static_cast<size_t>(i)]);
      }
    } else if (step < 0) {
      start = start < 0 ? start + n : std::min(start, n - 1);
      end = end < -n ? -1 : (end < 0 ? end + n : std::min(end, n - 1));
      for (int64_t i = start; i > end; i += step) out.push_back(v[static_cast<size_t>(i)]);
    }
    return out;
  }

  // Values of small integer tensors.
  void Evaluate(const onnx::NodeProto& n) {
    const std::string& type = n.op_type();
    if (n.output_size() == 0) return;
    const std::string& out = n.output(0);
    std::optional<Values> v;
    if (type == "Constant") {
      for (const auto& a : n.attribute()) {
        if (a.has_t()) v = TensorValues(a.t());
        if (a.name() == "value_ints") v = Values(a.ints().begin(), a.ints().end());
        if (a.name() == "value_int") v = Values{a.i()};
      }
    } else if (type == "Shape") {
      if (const Dims* d = Shape(n, 0)) {
        const auto rank = static_cast<int64_t>(d->size());
        v = SliceRange(*d, IntAttr(n, "start", 0), IntAttr(n, "end", rank), 1);
      }
    } else if (type == "Cast" || type == "Identity" || type == "Unsqueeze" || type == "Squeeze" ||
               type == "Flatten" || type == "Reshape") {
      if (const Values* a = Value(n, 0)) v = *a;
    } else if (type == "Gather") {
      const Values* data = Value(n, 0);
      const Values* idx = Value(n, 1);
      if (data && idx) {
        v.emplace();
        const auto size = static_cast<int64_t>(data->size());
        for (int64_t i : *idx) {
          if (i < 0) i += size;
          if (i < 0 || i >= size) return;
          v->push_back((*data)[static_cast<size_t>(i)]);
        }
      }
    } else if (type == "Concat") {
      v.emplace();
      for (int i = 0; i < n.input_size(); ++i) {
        const Values* a = Value(n, i);
        if (!a) return;
        v->insert(v->end(), a->begin(), a->end());
      }
    } else if (type == "Slice") {
      const Values* data = Value(n, 0);
      const Values* starts = Value(n, 1);
      const Values* ends = Value(n, 2);
      if (data && starts && ends && starts->size() == 1 && ends->size() == 1) {
        const Values* steps = Value(n, 4);
        v = SliceRange(*data, (*starts)[0], (*ends)[0], steps ? (*steps)[0] : 1);
      }
    } else if (type == "Add" || type == "Sub" || type == "Mul" || type == "Div" ||
               type == "Equal") {
      const Values* a = Value(n, 0);
      const Values* b = Value(n, 1);
      if (a && b && (a->size() == b->size() || a->size() == 1 || b->size() == 1)) {
        const size_t size = std::max(a->size(), b->size());
        v.emplace();
        for (size_t i = 0; i < size; ++i) {
          const int64_t x = (*a)[a->size() == 1 ? 0 : i], y = (*b)[b->size() == 1 ? 0 : i];
          if (type == "Add") v->push_back(x + y);
          if (type == "Sub") v->push_back(x - y);
          if (type == "Mul") v->push_back(x * y);
          if (type == "Div") {
            if (y == 0) return;
            v->push_back(x / y);
          }
          if (type == "Equal") v->push_back(x == y);
        }
      }
    } else if (type == "Where") {
      const Values* c = Value(n, 0);
      const Values* a = Value(n, 1);
      const Values* b = Value(n, 2);
      if (c && a && b) {
        const size_t size = std::max({c->size(), a->size(), b->size()});
        v.emplace();
        for (size_t i = 0; i < size; ++i) {
          const bool pick = (*c)[c->size() == 1 ? 0 : i] != 0;
          v->push_back(pick ? (*a)[a->size() == 1 ? 0 : i] : (*b)[b->size() == 1 ? 0 : i]);
        }
      }
    } else if (type == "ReduceProd") {
      if (const Values* a = Value(n, 0)) {
        int64_t p = 1;
        for (int64_t x : *a) p *= x;
        v = Values{p};
      }
    } else if (type == "Range") {
      const Values* s = Value(n, 0);
      const Values* l = Value(n, 1);
      const Values* d = Value(n, 2);
      if (s && l && d && (*d)[0] != 0) {
        v.emplace();
        for (int64_t x = (*s)[0]; ((*d)[0] > 0 ? x < (*l)[0] : x > (*l)[0]) && v->size() <= 64;
             x += (*d)[0]) {
          v->push_back(x);
        }
      }
    } else if (type == "ConstantOfShape") {
      const Values* shape = Value(n, 0);
      if (shape) {
        int64_t count = 1;
        for (int64_t x : *shape) count *= x;
        int64_t fill = 0;
        for (const auto& a : n.attribute()) {
          if (a.has_t()) {
            if (auto f = TensorValues(a.t()); f && !f->empty()) fill = (*f)[0];
          }
        }
        if (count >= 0 && count <= 64) v = Values(static_cast<size_t>(count), fill);
      }
    }
    if (v && v->size() <= 64) values_[out] = *v;
  }

  // The output shape of a node ONNX could not infer, from the values above.
  std::optional<Dims> OutputShape(const onnx::NodeProto& n) const {
    const std::string& type = n.op_type();
    const Dims* in = Shape(n, 0);
    if (type == "Reshape") {
      const Values* target = Value(n, 1);
      if (!in || !target) return std::nullopt;
      int64_t elements = 1;
      for (int64_t d : *in) elements *= d;
      Dims out;
      int infer = -1;
      int64_t known = 1;
      for (size_t i = 0; i < target->size(); ++i) {
        int64_t d = (*target)[i];
        if (d == 0 && IntAttr(n, "allowzero", 0) == 0) d = i < in->size() ? (*in)[i] : 1;
        if (d == -1) {
          infer = static_cast<int>(i);
          d = 1;
        } else {
          known *= d;
        }
        out.push_back(d);
      }
      if (infer >= 0) {
        if (known == 0) return std::nullopt;
        out[static_cast<size_t>(infer)] = elements / known;
      }
      return out;
    }
    if (type == "Expand") {
      const Values* shape = Value(n, 1);
      if (!in || !shape) return std::nullopt;
      const size_t rank = std::max(in->size(), shape->size());
      Dims out(rank);
      for (size_t i = 0; i < rank; ++i) {
        const int64_t a = i + in->size() >= rank ? (*in)[i + in->size() - rank] : 1;
        const int64_t b = i + shape->size() >= rank ? (*shape)[i + shape->size() - rank] : 1;
        out[i] = a == 1 ? b : a;
      }
      return out;
    }
    if (type == "Slice") {
      const Values* starts = Value(n, 1);
      const Values* ends = Value(n, 2);
      if (!in || !starts || !ends) return std::nullopt;
      const Values* axes = Value(n, 3);
      const Values* steps = Value(n, 4);
      Dims out = *in;
      for (size_t i = 0; i < starts->size() && i < ends->size(); ++i) {
        int64_t axis = axes ? (*axes)[i] : static_cast<int64_t>(i);
        if (axis < 0) axis += static_cast<int64_t>(in->size());
        if (axis < 0 || axis >= static_cast<int64_t>(in->size())) return std::nullopt;
        Values range((*in)[static_cast<size_t>(axis)]);
        out[static_cast<size_t>(axis)] = static_cast<int64_t>(
            SliceRange(range, (*starts)[i], (*ends)[i], steps ? (*steps)[i] : 1).size());
      }
      return out;
    }
    if (type == "Tile") {
      const Values* repeats = Value(n, 1);
      if (!in || !repeats || repeats->size() != in->size()) return std::nullopt;
      Dims out = *in;
      for (size_t i = 0; i < out.size(); ++i) out[i] *= (*repeats)[i];
      return out;
    }
    if (type == "ConstantOfShape") {
      if (const Values* shape = Value(n, 0)) return *shape;
    }
    if (type == "Resize") {  // with its `sizes` input (scales are floating point: not followed)
      if (const Values* sizes = Value(n, 3); sizes && !sizes->empty()) return *sizes;
    }
    if (type == "Range") {
      auto it = values_.find(n.output(0));
      if (it != values_.end()) return Dims{static_cast<int64_t>(it->second.size())};
    }
    return std::nullopt;
  }

  onnx::ModelProto& model_;
  std::map<std::string, Dims> shapes_;
  std::map<std::string, int> types_;
  std::map<std::string, Values> values_;
};

}  // namespace

Status InferOnnxShapes(onnx::ModelProto& model) {
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

}  // namespace dplace::io
