#include "dplace/io/onnx/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

namespace dplace::io {
namespace {

// An integer from a held element; the INT64 extremes exports use as "to the end" become ±2^62.
int64_t ToInt(double x) { return static_cast<int64_t>(std::clamp(x, -4.6e18, 4.6e18)); }

template <typename T>
std::vector<double> RawAs(const std::string& raw) {
  std::vector<T> w(raw.size() / sizeof(T));
  if (!w.empty()) std::memcpy(w.data(), raw.data(), w.size() * sizeof(T));
  return std::vector<double>(w.begin(), w.end());
}

int64_t Clamp(int64_t i, int64_t n, bool end) {
  if (i < 0) i += n;
  return std::clamp<int64_t>(i, 0, end ? n : n - 1);
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

}  // namespace

int64_t Elements(const Dims& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

bool IsReal(int32_t onnx_type) {
  return onnx_type == onnx::TensorProto::FLOAT || onnx_type == onnx::TensorProto::DOUBLE ||
         onnx_type == onnx::TensorProto::FLOAT16 || onnx_type == onnx::TensorProto::BFLOAT16;
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

std::optional<int64_t> Axis(int64_t axis, size_t rank) {
  const auto r = static_cast<int64_t>(rank);
  if (axis < 0) axis += r;
  if (axis < 0 || axis >= r) return std::nullopt;
  return axis;
}

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

const Value* NodeInputs::ValueOf(int i) const {
  if (i >= node_.input_size()) return nullptr;
  auto it = known_.values.find(node_.input(i));
  return it == known_.values.end() ? nullptr : &it->second;
}

const Dims* NodeInputs::ShapeOf(int i) const {
  if (i >= node_.input_size()) return nullptr;
  auto it = known_.shapes.find(node_.input(i));
  return it == known_.shapes.end() ? nullptr : &it->second;
}

std::optional<Dims> NodeInputs::Ints(int i) const {
  const Value* v = ValueOf(i);
  if (v == nullptr || v->dims.size() > 1) return std::nullopt;
  Dims out;
  for (double x : v->data) out.push_back(ToInt(x));
  return out;
}

std::optional<Dims> NodeInputs::Axes(int input) const {
  if (const onnx::AttributeProto* a = Attr("axes")) return Dims(a->ints().begin(), a->ints().end());
  if (Present(input)) return Ints(input);
  return Dims{};
}

const onnx::AttributeProto* NodeInputs::Attr(const char* name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t NodeInputs::IntAttr(const char* name, int64_t fallback) const {
  const onnx::AttributeProto* a = Attr(name);
  return a ? a->i() : fallback;
}

std::optional<int64_t> RangeCount(const NodeInputs& in) {
  const Value* s = in.ValueOf(0);
  const Value* l = in.ValueOf(1);
  const Value* d = in.ValueOf(2);
  if (!s || !l || !d || s->data.size() != 1 || l->data.size() != 1 || d->data.size() != 1 ||
      d->data[0] == 0) {
    return std::nullopt;
  }
  return ToInt(std::max(0.0, std::ceil((l->data[0] - s->data[0]) / d->data[0])));
}

std::optional<std::vector<std::vector<int64_t>>> SliceAxes(const NodeInputs& in, const Dims& dims) {
  auto starts = in.Ints(1);
  auto ends = in.Ints(2);
  if (!starts || !ends || starts->size() != ends->size()) return std::nullopt;
  auto axes = in.size() > 3 && in.Present(3) ? in.Ints(3) : std::optional<Dims>(Dims{});
  auto steps = in.size() > 4 && in.Present(4) ? in.Ints(4) : std::optional<Dims>(Dims{});
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

namespace kernels {

Kernel Constant() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    for (const auto& attr : in.node().attribute()) {
      if (attr.has_t()) return TensorValue(attr.t());
      if (attr.name() == "value_int") return Value{.dims = {}, .data = {double(attr.i())}};
      if (attr.name() == "value_ints") {
        return Value{.dims = {attr.ints_size()}, .data = {attr.ints().begin(), attr.ints().end()}};
      }
      if (attr.name() == "value_float") return Value{.dims = {}, .data = {attr.f()}, .real = true};
      if (attr.name() == "value_floats") {
        return Value{.dims = {attr.floats_size()},
                     .data = {attr.floats().begin(), attr.floats().end()},
                     .real = true};
      }
    }
    return std::nullopt;
  };
}

Kernel Shape() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const Dims* d = in.ShapeOf(0);
    if (!d) return std::nullopt;
    const auto rank = static_cast<int64_t>(d->size());
    Value out;
    for (int64_t i : SliceIndices(rank, in.IntAttr("start", 0), in.IntAttr("end", rank), 1)) {
      out.data.push_back(static_cast<double>((*d)[static_cast<size_t>(i)]));
    }
    out.dims = {static_cast<int64_t>(out.data.size())};
    return out;
  };
}

Kernel Size() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const Dims* d = in.ShapeOf(0);
    if (!d) return std::nullopt;
    return Value{.dims = {}, .data = {double(Elements(*d))}};
  };
}

Kernel ConstantOfShape() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    auto shape = in.Ints(0);
    if (!shape || Elements(*shape) > kMaxElements || Elements(*shape) < 0) return std::nullopt;
    Value fill{.dims = {}, .data = {0.0}, .real = true};
    if (const onnx::AttributeProto* attr = in.Attr("value")) {
      auto f = TensorValue(attr->t());
      if (!f || f->data.empty()) return std::nullopt;
      fill = *f;
    }
    return Value{.dims = *shape,
                 .data = std::vector<double>(static_cast<size_t>(Elements(*shape)), fill.data[0]),
                 .real = fill.real};
  };
}

Kernel Range() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const auto count = RangeCount(in);
    if (!count || *count > kMaxElements) return std::nullopt;
    const Value* start = in.ValueOf(0);
    const double delta = in.ValueOf(2)->data[0];
    Value out{.dims = {*count}, .data = {}, .real = start->real};
    for (int64_t i = 0; i < *count; ++i) {
      out.data.push_back(start->data[0] + static_cast<double>(i) * delta);
    }
    return out;
  };
}

Kernel Identity() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const Value* a = in.ValueOf(0);
    if (!a) return std::nullopt;
    return *a;
  };
}

Kernel Cast() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const Value* a = in.ValueOf(0);
    if (!a) return std::nullopt;
    Value out = *a;
    out.real = IsReal(static_cast<int32_t>(in.IntAttr("to", onnx::TensorProto::FLOAT)));
    if (!out.real) {
      const bool to_bool = in.IntAttr("to", 0) == onnx::TensorProto::BOOL;
      for (double& x : out.data) x = to_bool ? (x != 0) : std::trunc(x);
    }
    return out;
  };
}

Kernel Reshaped(ShapeRule shape) {
  return [shape = std::move(shape)](const NodeInputs& in) -> std::optional<Value> {
    const Value* a = in.ValueOf(0);
    if (!a || !in.ShapeOf(0)) return std::nullopt;
    auto dims = shape(in);
    if (!dims || Elements(*dims) != Elements(a->dims)) return std::nullopt;
    Value out = *a;
    out.dims = *dims;
    return out;
  };
}

Kernel Transpose() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const Value* a = in.ValueOf(0);
    if (!a) return std::nullopt;
    const size_t rank = a->dims.size();
    Dims perm(rank);
    std::iota(perm.rbegin(), perm.rend(), 0);
    if (const onnx::AttributeProto* p = in.Attr("perm"))
      perm.assign(p->ints().begin(), p->ints().end());
    if (perm.size() != rank) return std::nullopt;
    for (int64_t p : perm) {
      if (p < 0 || p >= static_cast<int64_t>(rank)) return std::nullopt;
    }
    Value out{.dims = Dims(rank), .data = {}, .real = a->real};
    for (size_t i = 0; i < rank; ++i) out.dims[i] = a->dims[static_cast<size_t>(perm[i])];
    const Dims strides = Strides(a->dims);
    ForEachIndex(out.dims, [&](const Dims& index) {
      int64_t flat = 0;
      for (size_t i = 0; i < rank; ++i) flat += index[i] * strides[static_cast<size_t>(perm[i])];
      out.data.push_back(a->data[static_cast<size_t>(flat)]);
    });
    return out;
  };
}

Kernel Gather() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const Value* data = in.ValueOf(0);
    const Value* idx = in.ValueOf(1);
    if (!data || !idx) return std::nullopt;
    auto axis = Axis(in.IntAttr("axis", 0), data->dims.size());
    if (!axis) return std::nullopt;
    const auto ax = static_cast<size_t>(*axis);
    Value out{.dims = {}, .data = {}, .real = data->real};
    out.dims.assign(data->dims.begin(), data->dims.begin() + *axis);
    out.dims.insert(out.dims.end(), idx->dims.begin(), idx->dims.end());
    out.dims.insert(out.dims.end(), data->dims.begin() + *axis + 1, data->dims.end());
    const Dims strides = Strides(data->dims);
    bool ok = true;
    ForEachIndex(out.dims, [&](const Dims& index) {
      int64_t flat = 0;
      for (size_t i = 0; i < ax; ++i) flat += index[i] * strides[i];
      Dims at(index.begin() + *axis,
              index.begin() + *axis + static_cast<int64_t>(idx->dims.size()));
      int64_t k = ToInt(idx->data[static_cast<size_t>(
          std::inner_product(at.begin(), at.end(), Strides(idx->dims).begin(), int64_t{0}))]);
      if (k < 0) k += data->dims[ax];
      if (k < 0 || k >= data->dims[ax]) {
        ok = false;
        return;
      }
      flat += k * strides[ax];
      for (size_t i = ax + 1; i < data->dims.size(); ++i) {
        flat += index[i - 1 + idx->dims.size()] * strides[i];
      }
      out.data.push_back(data->data[static_cast<size_t>(flat)]);
    });
    if (!ok) return std::nullopt;
    return out;
  };
}

Kernel Concat() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    std::vector<const Value*> parts;
    for (int i = 0; i < in.size(); ++i) {
      const Value* p = in.ValueOf(i);
      if (!p || (i > 0 && p->dims.size() != parts[0]->dims.size())) return std::nullopt;
      parts.push_back(p);
    }
    if (parts.empty()) return std::nullopt;
    auto axis = Axis(in.IntAttr("axis", 0), parts[0]->dims.size());
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
  };
}

Kernel Slice() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const Value* data = in.ValueOf(0);
    if (!data) return std::nullopt;
    auto kept = SliceAxes(in, data->dims);
    if (!kept) return std::nullopt;
    Value out{.dims = {}, .data = {}, .real = data->real};
    for (const auto& k : *kept) out.dims.push_back(static_cast<int64_t>(k.size()));
    const Dims strides = Strides(data->dims);
    ForEachIndex(out.dims, [&](const Dims& index) {
      int64_t flat = 0;
      for (size_t i = 0; i < index.size(); ++i)
        flat += (*kept)[i][static_cast<size_t>(index[i])] * strides[i];
      out.data.push_back(data->data[static_cast<size_t>(flat)]);
    });
    return out;
  };
}

Kernel Unary(std::function<std::optional<double>(double)> f) {
  return [f = std::move(f)](const NodeInputs& in) -> std::optional<Value> {
    const Value* a = in.ValueOf(0);
    if (!a) return std::nullopt;
    return Elementwise({a}, a->real, [&f](const double* x) { return f(x[0]); });
  };
}

Kernel Binary(std::function<std::optional<double>(double, double, bool)> f, bool compares) {
  return [f = std::move(f), compares](const NodeInputs& in) -> std::optional<Value> {
    const Value* a = in.ValueOf(0);
    const Value* b = in.ValueOf(1);
    if (!a || !b || in.size() != 2) return std::nullopt;
    const bool real = a->real || b->real;
    return Elementwise({a, b}, real && !compares,
                       [&](const double* x) { return f(x[0], x[1], real); });
  };
}

Kernel Where() {
  return [](const NodeInputs& in) -> std::optional<Value> {
    const Value* a = in.ValueOf(0);
    const Value* b = in.ValueOf(1);
    const Value* c = in.ValueOf(2);
    if (!a || !b || !c) return std::nullopt;
    return Elementwise({a, b, c}, b->real || c->real, [](const double* x) -> std::optional<double> {
      return x[0] != 0 ? x[1] : x[2];
    });
  };
}

Kernel Reduce(double init, double (*accumulate)(double, double)) {
  return [init, accumulate](const NodeInputs& in) -> std::optional<Value> {
    const Value* a = in.ValueOf(0);
    if (!a) return std::nullopt;
    auto axes = in.Axes(1);
    if (!axes) return std::nullopt;
    std::vector<bool> reduced(a->dims.size(), axes->empty());
    for (int64_t x : *axes) {
      auto axis = Axis(x, a->dims.size());
      if (!axis) return std::nullopt;
      reduced[static_cast<size_t>(*axis)] = true;
    }
    const bool keep = in.IntAttr("keepdims", 1) != 0;
    Dims kept_dims = a->dims;  // with reduced axes set to 1
    for (size_t i = 0; i < a->dims.size(); ++i) {
      if (reduced[i]) kept_dims[i] = 1;
    }
    if (a->data.empty()) return std::nullopt;
    std::vector<double> acc(static_cast<size_t>(Elements(kept_dims)), init);
    const Dims strides = Strides(kept_dims);
    size_t k = 0;
    ForEachIndex(a->dims, [&](const Dims& index) {
      int64_t flat = 0;
      for (size_t i = 0; i < index.size(); ++i) flat += (reduced[i] ? 0 : index[i]) * strides[i];
      double& r = acc[static_cast<size_t>(flat)];
      r = accumulate(r, a->data[k++]);
    });
    Value out{.dims = {}, .data = acc, .real = a->real};
    for (size_t i = 0; i < a->dims.size(); ++i) {
      if (!reduced[i] || keep) out.dims.push_back(kept_dims[i]);
    }
    return out;
  };
}

}  // namespace kernels
}  // namespace dplace::io
