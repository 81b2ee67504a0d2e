// Shape inference where ONNX's own stops: PyTorch exports compute many reshape targets, slice
// bounds, resize sizes and pads from Shape ops at run time (nn.MultiheadAttention, torchvision's
// segmentation heads and detection transforms), and ONNX shape inference (1.12) cannot follow the
// arithmetic. This evaluates the small tensors of those computations — integer and floating
// point, any rank, at most kMaxElements elements — derives the output shapes of Reshape, Expand,
// Slice, Tile, Pad, Resize, Upsample, TopK and of every node whose value it computed, follows the
// branch an If takes when its condition is computable, gives data-dependent sizes (NonZero,
// NonMaxSuppression) their upper bound, writes what it learns as value_info and runs ONNX shape
// inference again, until nothing new is learnt.
#include "dplace/io/onnx_shapes.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "dplace/base/isolated.h"

namespace dplace::io {
namespace {

using Dims = std::vector<int64_t>;

constexpr int64_t kMaxElements = 256;  // shape arithmetic only: activations are never evaluated

// A small tensor's value. Elements are held as doubles, which is exact for the integers of shape
// arithmetic (|x| < 2^53); `real` says whether ONNX would hold them as floating point.
struct Value {
  Dims dims;  // {} = scalar
  std::vector<double> data;
  bool real = false;
};

int64_t Elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// An integer from a held element; the INT64 extremes exports use as "to the end" become ±2^62.
int64_t ToInt(double x) { return static_cast<int64_t>(std::clamp(x, -4.6e18, 4.6e18)); }

bool IsReal(int32_t onnx_type) {
  return onnx_type == onnx::TensorProto::FLOAT || onnx_type == onnx::TensorProto::DOUBLE ||
         onnx_type == onnx::TensorProto::FLOAT16 || onnx_type == onnx::TensorProto::BFLOAT16;
}

template <typename T>
std::vector<double> RawAs(const std::string& raw) {
  std::vector<T> w(raw.size() / sizeof(T));
  if (!w.empty()) std::memcpy(w.data(), raw.data(), w.size() * sizeof(T));
  return std::vector<double>(w.begin(), w.end());
}

std::optional<Value> TensorValue(const onnx::TensorProto& t) {
  Value v{.dims = Dims(t.dims().begin(), t.dims().end()), .data = {}, .real = false};
  const int64_t n = Elements(v.dims);
  if (n > kMaxElements) return std::nullopt;
  switch (t.data_type()) {
    case onnx::TensorProto::INT64:
      v.data = t.has_raw_data() ? RawAs<int64_t>(t.raw_data())
                                : std::vector<double>(t.int64_data().begin(), t.int64_data().end());
      break;
    case onnx::TensorProto::INT32:
    case onnx::TensorProto::BOOL:
      v.data = t.has_raw_data()
                   ? (t.data_type() == onnx::TensorProto::BOOL ? RawAs<uint8_t>(t.raw_data())
                                                               : RawAs<int32_t>(t.raw_data()))
                   : std::vector<double>(t.int32_data().begin(), t.int32_data().end());
      break;
    case onnx::TensorProto::FLOAT:
      v.real = true;
      v.data = t.has_raw_data() ? RawAs<float>(t.raw_data())
                                : std::vector<double>(t.float_data().begin(), t.float_data().end());
      break;
    case onnx::TensorProto::DOUBLE:
      v.real = true;
      v.data = t.has_raw_data()
                   ? RawAs<double>(t.raw_data())
                   : std::vector<double>(t.double_data().begin(), t.double_data().end());
      break;
    default:
      return std::nullopt;
  }
  if (static_cast<int64_t>(v.data.size()) != n) return std::nullopt;  // weights not stored
  return v;
}

const onnx::AttributeProto* Attr(const onnx::NodeProto& node, const char* name) {
  for (const auto& a : node.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t IntAttr(const onnx::NodeProto& node, const char* name, int64_t fallback) {
  const onnx::AttributeProto* a = Attr(node, name);
  return a ? a->i() : fallback;
}

int64_t Clamp(int64_t i, int64_t n, bool end) {
  if (i < 0) i += n;
  return std::clamp<int64_t>(i, 0, end ? n : n - 1);
}

// The indices a Slice keeps of an axis of length n.
std::vector<int64_t> SliceIndices(int64_t n, int64_t start, int64_t end, int64_t step) {
  std::vector<int64_t> out;
  if (step > 0) {
    for (int64_t i = Clamp(start, n, true); i < Clamp(end, n, true); i += step) out.push_back(i);
  } else if (step < 0) {
    start = start < 0 ? start + n : std::min(start, n - 1);
    end = end < -n ? -1 : (end < 0 ? end + n : std::min(end, n - 1));
    for (int64_t i = start; i > end; i += step) out.push_back(i);
  }
  return out;
}

std::optional<int64_t> Axis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return std::nullopt;
  return axis;
}

// Row-major strides of dims.
Dims Strides(const Dims& dims) {
  Dims s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

// Calls f(index) for every multi-index of dims, in row-major order.
void ForEachIndex(const Dims& dims, const std::function<void(const Dims&)>& f) {
  const int64_t n = Elements(dims);
  Dims index(dims.size(), 0);
  for (int64_t k = 0; k < n; ++k) {
    f(index);
    for (size_t i = dims.size(); i-- > 0;) {
      if (++index[i] < dims[i]) break;
      index[i] = 0;
    }
  }
}

// Numpy broadcasting of two shapes.
std::optional<Dims> Broadcast(const Dims& a, const Dims& b) {
  const size_t rank = std::max(a.size(), b.size());
  Dims out(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t x = i + a.size() >= rank ? a[i + a.size() - rank] : 1;
    const int64_t y = i + b.size() >= rank ? b[i + b.size() - rank] : 1;
    if (x != y && x != 1 && y != 1) return std::nullopt;
    out[i] = x == 1 ? y : x;
  }
  return out;
}

// The element of v at a broadcast output index.
double At(const Value& v, const Dims& index) {
  const Dims strides = Strides(v.dims);
  int64_t flat = 0;
  const size_t offset = index.size() - v.dims.size();
  for (size_t i = 0; i < v.dims.size(); ++i) {
    flat += (v.dims[i] == 1 ? 0 : index[i + offset]) * strides[i];
  }
  return v.data[static_cast<size_t>(flat)];
}

std::optional<Value> Elementwise(const std::vector<const Value*>& in, bool real,
                                 const std::function<std::optional<double>(const double*)>& f) {
  Dims dims;
  for (const Value* v : in) {
    auto b = Broadcast(dims, v->dims);
    if (!b) return std::nullopt;
    dims = *b;
  }
  Value out{.dims = dims, .data = {}, .real = real};
  bool ok = true;
  ForEachIndex(dims, [&](const Dims& index) {
    double args[3] = {0, 0, 0};
    for (size_t i = 0; i < in.size(); ++i) args[i] = At(*in[i], index);
    if (auto r = f(args)) {
      out.data.push_back(*r);
    } else {
      ok = false;
    }
  });
  if (!ok) return std::nullopt;
  return out;
}

// Element-wise ops whose output shape is their inputs' broadcast.
const std::set<std::string> kBroadcasting = {
    "Add",  "Sub",     "Mul",  "Div",  "Pow",         "Equal",          "Less", "Greater",
    "Min",  "Max",     "And",  "Or",   "LessOrEqual", "GreaterOrEqual", "Mod",  "Where",
    "Sqrt", "Exp",     "Log",  "Cast", "Ceil",        "Floor",          "Neg",  "Abs",
    "Not",  "Sigmoid", "Relu", "Clip", "Reciprocal"};

class Propagator {
 public:
  explicit Propagator(onnx::ModelProto& model) : model_(model) {}

  // One pass: known shapes from the model, values and shapes derived in node order. Returns the
  // number of shapes it added as value_info.
  int Pass() {
    ReadShapes();
    int added = 0;
    for (auto& node : *model_.mutable_graph()->mutable_node()) {
      if (node.op_type() == "If") added += RunBranch(node);
      Evaluate(node);
      if (node.output_size() == 0 || node.output(0).empty() || Known(node.output(0))) continue;
      if (auto dims = OutputShape(node)) {
        AddShape(*model_.mutable_graph(), node.output(0), *dims, ElemType(node));
        ++added;
        if (node.op_type() == "TopK" && node.output_size() > 1) {  // and its indices
          AddShape(*model_.mutable_graph(), node.output(1), *dims, onnx::TensorProto::INT64);
        }
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
    for (const auto& node : g.node()) {  // what ONNX inferred inside If branches
      for (const auto& a : node.attribute()) {
        for (const auto& v : a.g().value_info()) read(v);
      }
    }
    for (const auto& t : g.initializer()) {
      shapes_[t.name()] = Dims(t.dims().begin(), t.dims().end());
      types_[t.name()] = t.data_type();
      if (auto v = TensorValue(t)) values_[t.name()] = *v;
    }
  }

  bool Known(const std::string& name) const { return shapes_.count(name) > 0; }
  const Value* In(const onnx::NodeProto& n, int i) const {
    if (i >= n.input_size()) return nullptr;
    auto it = values_.find(n.input(i));
    return it == values_.end() ? nullptr : &it->second;
  }
  // A 1-D (or scalar) integer input's elements.
  std::optional<Dims> Ints(const onnx::NodeProto& n, int i) const {
    const Value* v = In(n, i);
    if (v == nullptr || v->dims.size() > 1) return std::nullopt;
    Dims out;
    for (double x : v->data) out.push_back(ToInt(x));
    return out;
  }
  const Dims* Shape(const onnx::NodeProto& n, int i) const {
    if (i >= n.input_size()) return nullptr;
    auto it = shapes_.find(n.input(i));
    return it == shapes_.end() ? nullptr : &it->second;
  }
  // Axes of a node: its `axes` attribute (older opsets) or its input `input` (newer ones).
  std::optional<Dims> Axes(const onnx::NodeProto& n, int input) const {
    if (const onnx::AttributeProto* a = Attr(n, "axes"))
      return Dims(a->ints().begin(), a->ints().end());
    if (input < n.input_size() && !n.input(input).empty()) return Ints(n, input);
    return Dims{};
  }

  // The element type of the node's first output.
  int ElemType(const onnx::NodeProto& n) const {
    const std::string& type = n.op_type();
    if (type == "ConstantOfShape") {
      const onnx::AttributeProto* a = Attr(n, "value");
      return a ? a->t().data_type() : onnx::TensorProto::FLOAT;
    }
    if (type == "Shape" || type == "Size" || type == "NonZero" || type == "NonMaxSuppression") {
      return onnx::TensorProto::INT64;
    }
    if (auto it = branch_shapes_.find(n.output(0)); it != branch_shapes_.end()) {
      return it->second.second;
    }
    if (type == "Cast") return static_cast<int>(IntAttr(n, "to", onnx::TensorProto::FLOAT));
    if (type == "Equal" || type == "Less" || type == "Greater" || type == "Not" ||
        type == "LessOrEqual" || type == "GreaterOrEqual") {
      return onnx::TensorProto::BOOL;
    }
    const int first = type == "Where" ? 1 : 0;
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
    shapes_[name] = dims;
    types_[name] = elem_type;
  }

  // The branch an If takes when its condition is computable: its nodes are evaluated and sized
  // like the main graph's (names are unique across subgraphs), the shapes learnt are written to
  // the branch's value_info, and its outputs become the If's. Returns the number of shapes learnt.
  int RunBranch(onnx::NodeProto& n) {
    const Value* cond = In(n, 0);
    if (cond == nullptr || cond->data.size() != 1) return 0;
    const char* taken = cond->data[0] != 0 ? "then_branch" : "else_branch";
    onnx::GraphProto* branch = nullptr;
    for (auto& a : *n.mutable_attribute()) {
      if (a.name() == taken) branch = a.mutable_g();
    }
    if (branch == nullptr || branch->output_size() != n.output_size()) return 0;
    int learnt = 0;
    for (auto& node : *branch->mutable_node()) {
      if (node.op_type() == "If") learnt += RunBranch(node);
      Evaluate(node);
      if (node.output_size() == 0 || node.output(0).empty() || Known(node.output(0))) continue;
      if (auto dims = OutputShape(node)) {
        AddShape(*branch, node.output(0), *dims, ElemType(node));
        ++learnt;
      }
    }
    for (int i = 0; i < n.output_size(); ++i) {
      const std::string& inner = branch->output(i).name();
      if (auto v = values_.find(inner); v != values_.end()) values_[n.output(i)] = v->second;
      if (auto d = shapes_.find(inner); d != shapes_.end()) {
        branch_shapes_[n.output(i)] = {d->second, types_[inner]};
      }
    }
    return learnt;
  }

  // Values of small tensors.
  void Evaluate(const onnx::NodeProto& n) {
    if (n.output_size() == 0 || n.output(0).empty()) return;
    std::optional<Value> v = Compute(n);
    if (v && Elements(v->dims) <= kMaxElements &&
        static_cast<int64_t>(v->data.size()) == Elements(v->dims)) {
      values_[n.output(0)] = std::move(*v);
    }
  }

  std::optional<Value> Compute(const onnx::NodeProto& n) const {
    const std::string& type = n.op_type();
    const Value* a = In(n, 0);
    if (type == "Constant") {
      for (const auto& attr : n.attribute()) {
        if (attr.has_t()) return TensorValue(attr.t());
        if (attr.name() == "value_int") return Value{.dims = {}, .data = {double(attr.i())}};
        if (attr.name() == "value_ints") {
          return Value{.dims = {attr.ints_size()},
                       .data = {attr.ints().begin(), attr.ints().end()}};
        }
        if (attr.name() == "value_float") {
          return Value{.dims = {}, .data = {attr.f()}, .real = true};
        }
        if (attr.name() == "value_floats") {
          return Value{.dims = {attr.floats_size()},
                       .data = {attr.floats().begin(), attr.floats().end()},
                       .real = true};
        }
      }
      return std::nullopt;
    }
    if (type == "Shape" || type == "Size") {
      const Dims* d = Shape(n, 0);
      if (!d) return std::nullopt;
      if (type == "Size") return Value{.dims = {}, .data = {double(Elements(*d))}};
      const auto rank = static_cast<int64_t>(d->size());
      Value out;
      for (int64_t i : SliceIndices(rank, IntAttr(n, "start", 0), IntAttr(n, "end", rank), 1)) {
        out.data.push_back(static_cast<double>((*d)[static_cast<size_t>(i)]));
      }
      out.dims = {static_cast<int64_t>(out.data.size())};
      return out;
    }
    if (type == "ConstantOfShape" || type == "Range") return Generate(n);
    if (!a) return std::nullopt;
    if (type == "Identity") return *a;
    if (type == "Cast") {
      Value out = *a;
      out.real = IsReal(static_cast<int32_t>(IntAttr(n, "to", onnx::TensorProto::FLOAT)));
      if (!out.real) {
        const bool to_bool = IntAttr(n, "to", 0) == onnx::TensorProto::BOOL;
        for (double& x : out.data) x = to_bool ? (x != 0) : std::trunc(x);
      }
      return out;
    }
    if (type == "Reshape" || type == "Flatten" || type == "Unsqueeze" || type == "Squeeze") {
      auto dims = OutputShape(n);
      if (!dims || Elements(*dims) != Elements(a->dims)) return std::nullopt;
      Value out = *a;
      out.dims = *dims;
      return out;
    }
    if (type == "Transpose") {
      const size_t rank = a->dims.size();
      Dims perm(rank);
      std::iota(perm.rbegin(), perm.rend(), 0);
      if (const onnx::AttributeProto* p = Attr(n, "perm"))
        perm.assign(p->ints().begin(), p->ints().end());
      if (perm.size() != rank) return std::nullopt;
      Value out{.dims = Dims(rank), .data = {}, .real = a->real};
      for (size_t i = 0; i < rank; ++i) out.dims[i] = a->dims[static_cast<size_t>(perm[i])];
      const Dims strides = Strides(a->dims);
      ForEachIndex(out.dims, [&](const Dims& index) {
        int64_t flat = 0;
        for (size_t i = 0; i < rank; ++i) flat += index[i] * strides[static_cast<size_t>(perm[i])];
        out.data.push_back(a->data[static_cast<size_t>(flat)]);
      });
      return out;
    }
    if (type == "Gather") return Gather(n, *a);
    if (type == "Concat") return Concat(n);
    if (type == "Slice") return Slice(n, *a);
    if (type == "Ceil" || type == "Floor" || type == "Neg" || type == "Abs" || type == "Sqrt" ||
        type == "Round" || type == "Reciprocal" || type == "Not") {
      return Elementwise({a}, a->real, [&type](const double* x) -> std::optional<double> {
        if (type == "Ceil") return std::ceil(x[0]);
        if (type == "Floor") return std::floor(x[0]);
        if (type == "Neg") return -x[0];
        if (type == "Abs") return std::abs(x[0]);
        if (type == "Sqrt") return std::sqrt(x[0]);
        if (type == "Round") return std::nearbyint(x[0]);
        if (type == "Reciprocal") {
          if (x[0] == 0) return std::nullopt;
          return 1 / x[0];
        }
        return double(x[0] == 0);
      });
    }
    if (type == "Add" || type == "Sub" || type == "Mul" || type == "Div" || type == "Equal" ||
        type == "Less" || type == "Greater" || type == "Min" || type == "Max" || type == "Pow" ||
        type == "And" || type == "Or" || type == "Mod") {
      const Value* b = In(n, 1);
      if (!b || n.input_size() != 2) return std::nullopt;
      const bool real = a->real || b->real;
      const bool compares = type == "Equal" || type == "Less" || type == "Greater";
      return Elementwise({a, b}, real && !compares, [&](const double* x) -> std::optional<double> {
        if (type == "Add") return x[0] + x[1];
        if (type == "Sub") return x[0] - x[1];
        if (type == "Mul") return x[0] * x[1];
        if (type == "Div") {
          if (x[1] == 0) return std::nullopt;
          return real ? x[0] / x[1] : std::trunc(x[0] / x[1]);
        }
        if (type == "Equal") return double(x[0] == x[1]);
        if (type == "Less") return double(x[0] < x[1]);
        if (type == "Greater") return double(x[0] > x[1]);
        if (type == "Min") return std::min(x[0], x[1]);
        if (type == "Max") return std::max(x[0], x[1]);
        if (type == "Pow") return std::pow(x[0], x[1]);
        if (type == "And") return double(x[0] != 0 && x[1] != 0);
        if (type == "Or") return double(x[0] != 0 || x[1] != 0);
        if (x[1] == 0) return std::nullopt;  // Mod
        return std::fmod(x[0], x[1]);
      });
    }
    if (type == "Where") {
      const Value* b = In(n, 1);
      const Value* c = In(n, 2);
      if (!b || !c) return std::nullopt;
      return Elementwise(
          {a, b, c}, b->real || c->real,
          [](const double* x) -> std::optional<double> { return x[0] != 0 ? x[1] : x[2]; });
    }
    if (type == "ReduceProd" || type == "ReduceMax" || type == "ReduceMin" || type == "ReduceSum") {
      return Reduce(n, *a);
    }
    return std::nullopt;
  }

  std::optional<Value> Generate(const onnx::NodeProto& n) const {
    if (n.op_type() == "ConstantOfShape") {
      auto shape = Ints(n, 0);
      if (!shape || Elements(*shape) > kMaxElements || Elements(*shape) < 0) return std::nullopt;
      Value fill{.dims = {}, .data = {0.0}, .real = true};
      if (const onnx::AttributeProto* attr = Attr(n, "value")) {
        auto f = TensorValue(attr->t());
        if (!f || f->data.empty()) return std::nullopt;
        fill = *f;
      }
      return Value{.dims = *shape,
                   .data = std::vector<double>(static_cast<size_t>(Elements(*shape)), fill.data[0]),
                   .real = fill.real};
    }
    const auto count = RangeCount(n);
    if (!count || *count > kMaxElements) return std::nullopt;
    const Value* start = In(n, 0);
    const double delta = In(n, 2)->data[0];
    Value out{.dims = {*count}, .data = {}, .real = start->real};
    for (int64_t i = 0; i < *count; ++i) {
      out.data.push_back(start->data[0] + static_cast<double>(i) * delta);
    }
    return out;
  }

  // The length of a Range with known start, limit and delta.
  std::optional<int64_t> RangeCount(const onnx::NodeProto& n) const {
    const Value* s = In(n, 0);
    const Value* l = In(n, 1);
    const Value* d = In(n, 2);
    if (!s || !l || !d || s->data.size() != 1 || l->data.size() != 1 || d->data.size() != 1 ||
        d->data[0] == 0) {
      return std::nullopt;
    }
    return ToInt(std::max(0.0, std::ceil((l->data[0] - s->data[0]) / d->data[0])));
  }

  std::optional<Value> Gather(const onnx::NodeProto& n, const Value& data) const {
    const Value* idx = In(n, 1);
    auto axis = Axis(IntAttr(n, "axis", 0), data.dims.size());
    if (!idx || !axis) return std::nullopt;
    const auto ax = static_cast<size_t>(*axis);
    Value out{.dims = {}, .data = {}, .real = data.real};
    out.dims.assign(data.dims.begin(), data.dims.begin() + *axis);
    out.dims.insert(out.dims.end(), idx->dims.begin(), idx->dims.end());
    out.dims.insert(out.dims.end(), data.dims.begin() + *axis + 1, data.dims.end());
    const Dims strides = Strides(data.dims);
    bool ok = true;
    ForEachIndex(out.dims, [&](const Dims& index) {
      int64_t flat = 0;
      for (size_t i = 0; i < ax; ++i) flat += index[i] * strides[i];
      Dims at(index.begin() + *axis,
              index.begin() + *axis + static_cast<int64_t>(idx->dims.size()));
      int64_t k = ToInt(idx->data[static_cast<size_t>(
          std::inner_product(at.begin(), at.end(), Strides(idx->dims).begin(), int64_t{0}))]);
      if (k < 0) k += data.dims[ax];
      if (k < 0 || k >= data.dims[ax]) {
        ok = false;
        return;
      }
      flat += k * strides[ax];
      for (size_t i = ax + 1; i < data.dims.size(); ++i) {
        flat += index[i - 1 + idx->dims.size()] * strides[i];
      }
      out.data.push_back(data.data[static_cast<size_t>(flat)]);
    });
    if (!ok) return std::nullopt;
    return out;
  }

  std::optional<Value> Concat(const onnx::NodeProto& n) const {
    std::vector<const Value*> parts;
    for (int i = 0; i < n.input_size(); ++i) {
      const Value* p = In(n, i);
      if (!p || (i > 0 && p->dims.size() != parts[0]->dims.size())) return std::nullopt;
      parts.push_back(p);
    }
    if (parts.empty()) return std::nullopt;
    auto axis = Axis(IntAttr(n, "axis", 0), parts[0]->dims.size());
    if (!axis) return std::nullopt;
    const auto ax = static_cast<size_t>(*axis);
    // Row-major: for each outer index, each part's block along the axis and after it.
    int64_t outer = 1;
    for (size_t i = 0; i < ax; ++i) outer *= parts[0]->dims[i];
    Value out{.dims = parts[0]->dims, .data = {}, .real = parts[0]->real};
    out.dims[ax] = 0;
    for (const Value* p : parts) out.dims[ax] += p->dims[ax];
    for (int64_t o = 0; o < outer; ++o) {
      for (const Value* p : parts) {
        const int64_t block = static_cast<int64_t>(p->data.size()) / std::max<int64_t>(outer, 1);
        out.data.insert(out.data.end(), p->data.begin() + o * block,
                        p->data.begin() + (o + 1) * block);
      }
    }
    return out;
  }

  // The kept indices per axis of a Slice over `dims`.
  std::optional<std::vector<std::vector<int64_t>>> SliceAxes(const onnx::NodeProto& n,
                                                             const Dims& dims) const {
    auto starts = Ints(n, 1);
    auto ends = Ints(n, 2);
    if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
    auto axes =
        n.input_size() > 3 && !n.input(3).empty() ? Ints(n, 3) : std::optional<Dims>(Dims{});
    auto steps =
        n.input_size() > 4 && !n.input(4).empty() ? Ints(n, 4) : std::optional<Dims>(Dims{});
    if (!axes || !steps) return std::nullopt;
    std::vector<std::vector<int64_t>> kept(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) kept[i] = SliceIndices(dims[i], 0, dims[i], 1);
    for (size_t i = 0; i < starts->size(); ++i) {
      auto axis = Axis(axes->empty() ? static_cast<int64_t>(i) : (*axes)[i], dims.size());
      if (!axis) return std::nullopt;
      const int64_t step = steps->empty() ? 1 : (*steps)[i];
      kept[static_cast<size_t>(*axis)] =
          SliceIndices(dims[static_cast<size_t>(*axis)], (*starts)[i], (*ends)[i], step);
    }
    return kept;
  }

  std::optional<Value> Slice(const onnx::NodeProto& n, const Value& data) const {
    auto kept = SliceAxes(n, data.dims);
    if (!kept) return std::nullopt;
    Value out{.dims = {}, .data = {}, .real = data.real};
    for (const auto& k : *kept) out.dims.push_back(static_cast<int64_t>(k.size()));
    const Dims strides = Strides(data.dims);
    ForEachIndex(out.dims, [&](const Dims& index) {
      int64_t flat = 0;
      for (size_t i = 0; i < index.size(); ++i)
        flat += (*kept)[i][static_cast<size_t>(index[i])] * strides[i];
      out.data.push_back(data.data[static_cast<size_t>(flat)]);
    });
    return out;
  }

  std::optional<Value> Reduce(const onnx::NodeProto& n, const Value& a) const {
    auto axes = Axes(n, 1);
    if (!axes) return std::nullopt;
    std::vector<bool> reduced(a.dims.size(), axes->empty());
    for (int64_t x : *axes) {
      auto axis = Axis(x, a.dims.size());
      if (!axis) return std::nullopt;
      reduced[static_cast<size_t>(*axis)] = true;
    }
    const bool keep = IntAttr(n, "keepdims", 1) != 0;
    Dims kept_dims = a.dims;  // with reduced axes set to 1
    for (size_t i = 0; i < a.dims.size(); ++i) {
      if (reduced[i]) kept_dims[i] = 1;
    }
    const std::string& type = n.op_type();
    const double init = type == "ReduceProd"  ? 1
                        : type == "ReduceSum" ? 0
                        : type == "ReduceMax" ? -HUGE_VAL
                                              : HUGE_VAL;
    if (a.data.empty()) return std::nullopt;
    std::vector<double> acc(static_cast<size_t>(Elements(kept_dims)), init);
    const Dims strides = Strides(kept_dims);
    size_t k = 0;
    ForEachIndex(a.dims, [&](const Dims& index) {
      int64_t flat = 0;
      for (size_t i = 0; i < index.size(); ++i) flat += (reduced[i] ? 0 : index[i]) * strides[i];
      double& r = acc[static_cast<size_t>(flat)];
      const double x = a.data[k++];
      if (type == "ReduceProd") r *= x;
      if (type == "ReduceSum") r += x;
      if (type == "ReduceMax") r = std::max(r, x);
      if (type == "ReduceMin") r = std::min(r, x);
    });
    Value out{.dims = {}, .data = acc, .real = a.real};
    for (size_t i = 0; i < a.dims.size(); ++i) {
      if (!reduced[i] || keep) out.dims.push_back(kept_dims[i]);
    }
    return out;
  }

  // The output shape of a node ONNX could not infer, from the values above.
  std::optional<Dims> OutputShape(const onnx::NodeProto& n) const {
    if (auto it = values_.find(n.output(0)); it != values_.end()) return it->second.dims;
    if (auto it = branch_shapes_.find(n.output(0)); it != branch_shapes_.end())
      return it->second.first;
    const std::string& type = n.op_type();
    const Dims* in = Shape(n, 0);
    if (!in) return std::nullopt;
    if (type == "Reshape") {
      auto target = Ints(n, 1);
      if (!target) return std::nullopt;
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
        out[static_cast<size_t>(infer)] = Elements(*in) / known;
      }
      return out;
    }
    if (type == "Flatten") {
      auto axis = IntAttr(n, "axis", 1);
      if (axis < 0) axis += static_cast<int64_t>(in->size());
      if (axis < 0 || axis > static_cast<int64_t>(in->size())) return std::nullopt;
      const Dims head(in->begin(), in->begin() + axis), tail(in->begin() + axis, in->end());
      return Dims{Elements(head), Elements(tail)};
    }
    if (type == "Unsqueeze") {
      auto axes = Axes(n, 1);
      if (!axes) return std::nullopt;
      Dims out = *in;
      const size_t rank = in->size() + axes->size();
      Dims sorted;
      for (int64_t x : *axes) {
        auto axis = Axis(x, rank);
        if (!axis) return std::nullopt;
        sorted.push_back(*axis);
      }
      std::sort(sorted.begin(), sorted.end());
      for (int64_t axis : sorted) out.insert(out.begin() + axis, 1);
      return out;
    }
    if (type == "Squeeze") {
      auto axes = Axes(n, 1);
      if (!axes) return std::nullopt;
      std::vector<bool> drop(in->size(), false);
      for (size_t i = 0; i < in->size(); ++i) drop[i] = axes->empty() && (*in)[i] == 1;
      for (int64_t x : *axes) {
        auto axis = Axis(x, in->size());
        if (!axis) return std::nullopt;
        drop[static_cast<size_t>(*axis)] = true;
      }
      Dims out;
      for (size_t i = 0; i < in->size(); ++i) {
        if (!drop[i]) out.push_back((*in)[i]);
      }
      return out;
    }
    if (type == "Expand") {
      auto shape = Ints(n, 1);
      if (!shape) return std::nullopt;
      return Broadcast(*in, *shape);
    }
    if (type == "Slice") {
      auto kept = SliceAxes(n, *in);
      if (!kept) return std::nullopt;
      Dims out;
      for (const auto& k : *kept) out.push_back(static_cast<int64_t>(k.size()));
      return out;
    }
    if (type == "Tile") {
      auto repeats = Ints(n, 1);
      if (!repeats || repeats->size() != in->size()) return std::nullopt;
      Dims out = *in;
      for (size_t i = 0; i < out.size(); ++i) out[i] *= (*repeats)[i];
      return out;
    }
    if (type == "Pad") {  // pads as an input (opset 11+): begins of every axis, then ends
      auto pads = Ints(n, 1);
      if (!pads || pads->size() != 2 * in->size() || Attr(n, "pads") || n.input_size() > 3) {
        return std::nullopt;
      }
      Dims out = *in;
      for (size_t i = 0; i < out.size(); ++i) out[i] += (*pads)[i] + (*pads)[i + in->size()];
      return out;
    }
    if (type == "Gather") {
      const Dims* idx = Shape(n, 1);
      auto axis = Axis(IntAttr(n, "axis", 0), in->size());
      if (!idx || !axis) return std::nullopt;
      Dims out(in->begin(), in->begin() + *axis);
      out.insert(out.end(), idx->begin(), idx->end());
      out.insert(out.end(), in->begin() + *axis + 1, in->end());
      return out;
    }
    if (kBroadcasting.count(type) > 0) {
      Dims out;
      for (int i = 0; i < n.input_size(); ++i) {
        const Dims* d = Shape(n, i);
        if (!d) return std::nullopt;
        auto b = Broadcast(out, *d);
        if (!b) return std::nullopt;
        out = *b;
      }
      return out;
    }
    // Sizes that depend on the data take their upper bound: every element selected, every box kept.
    if (type == "NonZero") return Dims{static_cast<int64_t>(in->size()), Elements(*in)};
    if (type == "NonMaxSuppression") {  // boxes [batch, boxes, 4], scores [batch, classes, boxes]
      const Dims* scores = Shape(n, 1);
      if (in->size() != 3 || !scores || scores->size() != 3) return std::nullopt;
      int64_t per_class = (*in)[1];
      if (auto max = Ints(n, 2); max && max->size() == 1)
        per_class = std::min(per_class, (*max)[0]);
      return Dims{(*scores)[0] * (*scores)[1] * per_class, 3};
    }
    if (type == "ConstantOfShape") return Ints(n, 0);  // too large to hold its value
    if (type == "TopK") {
      auto k = Ints(n, 1);
      auto axis = Axis(IntAttr(n, "axis", -1), in->size());
      if (!k || k->size() != 1 || !axis) return std::nullopt;
      Dims out = *in;
      out[static_cast<size_t>(*axis)] = std::min((*k)[0], (*in)[static_cast<size_t>(*axis)]);
      return out;
    }
    if (type == "Range") {
      if (auto count = RangeCount(n)) return Dims{*count};
    }
    if (type == "Resize" || type == "Upsample") {  // from sizes, else floor(input × scales)
      if (auto sizes = Ints(n, 3); sizes && sizes->size() == in->size()) return *sizes;
      const Value* scales = In(n, type == "Resize" ? 2 : 1);
      if (!scales || scales->data.size() != in->size()) return std::nullopt;
      Dims out = *in;
      for (size_t i = 0; i < out.size(); ++i) {
        out[i] = static_cast<int64_t>(std::floor(static_cast<double>(out[i]) * scales->data[i]));
      }
      return out;
    }
    return std::nullopt;
  }

  onnx::ModelProto& model_;
  std::map<std::string, Dims> shapes_;
  std::map<std::string, int> types_;
  std::map<std::string, Value> values_;
  std::map<std::string, std::pair<Dims, int>> branch_shapes_;  // If outputs: shape, element type
};

}  // namespace

namespace {

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
