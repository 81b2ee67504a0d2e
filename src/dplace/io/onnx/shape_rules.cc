#include "dplace/io/onnx/shape_rules.h"

#include <algorithm>
#include <cmath>

namespace dplace::io::shape_rules {
namespace {

// A rule that needs the first input's shape: `f(in, dims)`.
template <typename F>
ShapeRule OnFirst(F f) {
  return [f](const NodeInputs& in) -> std::optional<Dims> {
    const Dims* dims = in.ShapeOf(0);
    if (!dims) return std::nullopt;
    return f(in, *dims);
  };
}

}  // namespace

ShapeRule Reshape() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto target = in.Ints(1);
    if (!target) return std::nullopt;
    Dims out;
    int infer = -1;
    int64_t known = 1;
    for (size_t i = 0; i < target->size(); ++i) {
      int64_t d = (*target)[i];
      if (d == 0 && in.IntAttr("allowzero", 0) == 0) d = i < dims.size() ? dims[i] : 1;
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
      out[static_cast<size_t>(infer)] = Elements(dims) / known;
    }
    return out;
  });
}

ShapeRule Flatten() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto axis = in.IntAttr("axis", 1);
    if (axis < 0) axis += static_cast<int64_t>(dims.size());
    if (axis < 0 || axis > static_cast<int64_t>(dims.size())) return std::nullopt;
    const Dims head(dims.begin(), dims.begin() + axis), tail(dims.begin() + axis, dims.end());
    return Dims{Elements(head), Elements(tail)};
  });
}

ShapeRule Unsqueeze() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto axes = in.Axes(1);
    if (!axes) return std::nullopt;
    Dims out = dims;
    const size_t rank = dims.size() + axes->size();
    Dims sorted;
    for (int64_t x : *axes) {
      auto axis = Axis(x, rank);
      if (!axis) return std::nullopt;
      sorted.push_back(*axis);
    }
    std::sort(sorted.begin(), sorted.end());
    for (int64_t axis : sorted) {
      if (axis > static_cast<int64_t>(out.size())) return std::nullopt;
      out.insert(out.begin() + axis, 1);
    }
    return out;
  });
}

ShapeRule Squeeze() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto axes = in.Axes(1);
    if (!axes) return std::nullopt;
    std::vector<bool> drop(dims.size(), false);
    for (size_t i = 0; i < dims.size(); ++i) drop[i] = axes->empty() && dims[i] == 1;
    for (int64_t x : *axes) {
      auto axis = Axis(x, dims.size());
      if (!axis) return std::nullopt;
      drop[static_cast<size_t>(*axis)] = true;
    }
    Dims out;
    for (size_t i = 0; i < dims.size(); ++i) {
      if (!drop[i]) out.push_back(dims[i]);
    }
    return out;
  });
}

ShapeRule Expand() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto shape = in.Ints(1);
    if (!shape) return std::nullopt;
    return io::Broadcast(dims, *shape);
  });
}

ShapeRule Slice() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto kept = SliceAxes(in, dims);
    if (!kept) return std::nullopt;
    Dims out;
    for (const auto& k : *kept) out.push_back(static_cast<int64_t>(k.size()));
    return out;
  });
}

ShapeRule Tile() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto repeats = in.Ints(1);
    if (!repeats || repeats->size() != dims.size()) return std::nullopt;
    Dims out = dims;
    for (size_t i = 0; i < out.size(); ++i) out[i] *= (*repeats)[i];
    return out;
  });
}

ShapeRule Pad() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto pads = in.Ints(1);
    if (!pads || pads->size() != 2 * dims.size() || in.Attr("pads") || in.size() > 3) {
      return std::nullopt;
    }
    Dims out = dims;
    for (size_t i = 0; i < out.size(); ++i) out[i] += (*pads)[i] + (*pads)[i + dims.size()];
    return out;
  });
}

ShapeRule Gather() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    const Dims* idx = in.ShapeOf(1);
    auto axis = Axis(in.IntAttr("axis", 0), dims.size());
    if (!idx || !axis) return std::nullopt;
    Dims out(dims.begin(), dims.begin() + *axis);
    out.insert(out.end(), idx->begin(), idx->end());
    out.insert(out.end(), dims.begin() + *axis + 1, dims.end());
    return out;
  });
}

ShapeRule Broadcast() {
  return OnFirst([](const NodeInputs& in, const Dims&) -> std::optional<Dims> {
    Dims out;
    for (int i = 0; i < in.size(); ++i) {
      const Dims* d = in.ShapeOf(i);
      if (!d) return std::nullopt;
      auto b = io::Broadcast(out, *d);
      if (!b) return std::nullopt;
      out = *b;
    }
    return out;
  });
}

ShapeRule NonZero() {
  return OnFirst([](const NodeInputs&, const Dims& dims) -> std::optional<Dims> {
    return Dims{static_cast<int64_t>(dims.size()), Elements(dims)};
  });
}

ShapeRule NonMaxSuppression() {
  // boxes [batch, boxes, 4], scores [batch, classes, boxes]
  return OnFirst([](const NodeInputs& in, const Dims& boxes) -> std::optional<Dims> {
    const Dims* scores = in.ShapeOf(1);
    if (boxes.size() != 3 || !scores || scores->size() != 3) return std::nullopt;
    int64_t per_class = boxes[1];
    if (auto max = in.Ints(2); max && max->size() == 1) per_class = std::min(per_class, (*max)[0]);
    return Dims{(*scores)[0] * (*scores)[1] * per_class, 3};
  });
}

ShapeRule ConstantOfShape() {
  return OnFirst([](const NodeInputs& in, const Dims&) { return in.Ints(0); });
}

ShapeRule TopK() {
  return OnFirst([](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    auto k = in.Ints(1);
    auto axis = Axis(in.IntAttr("axis", -1), dims.size());
    if (!k || k->size() != 1 || !axis) return std::nullopt;
    Dims out = dims;
    out[static_cast<size_t>(*axis)] = std::min((*k)[0], dims[static_cast<size_t>(*axis)]);
    return out;
  });
}

ShapeRule Range() {
  return OnFirst([](const NodeInputs& in, const Dims&) -> std::optional<Dims> {
    if (auto count = RangeCount(in)) return Dims{*count};
    return std::nullopt;
  });
}

ShapeRule Resize(int scales_input) {
  return OnFirst([scales_input](const NodeInputs& in, const Dims& dims) -> std::optional<Dims> {
    if (auto sizes = in.Ints(3); sizes && sizes->size() == dims.size()) return *sizes;
    const Value* scales = in.ValueOf(scales_input);
    if (!scales || scales->data.size() != dims.size()) return std::nullopt;
    Dims out = dims;
    for (size_t i = 0; i < out.size(); ++i) {
      out[i] = static_cast<int64_t>(std::floor(static_cast<double>(out[i]) * scales->data[i]));
    }
    return out;
  });
}

}  // namespace dplace::io::shape_rules
