// A small-tensor interpreter for ONNX shape arithmetic. PyTorch exports compute reshape targets,
// slice bounds, resize sizes and pads from Shape ops at run time; shape propagation (shapes.h)
// evaluates those small tensors — integer and floating point, any rank, at most kMaxElements
// elements — with the kernels here. Activations are never evaluated.
//
// What a kernel or a shape rule (shape_rules.h) may know of a node's inputs is a `NodeInputs`: the
// node, and the shapes and values known so far by tensor name.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace dplace::io {

using Dims = std::vector<int64_t>;

inline constexpr int64_t kMaxElements = 256;

// A small tensor's value. Elements are held as doubles, which is exact for the integers of shape
// arithmetic (|x| < 2^53); `real` says whether ONNX would hold them as floating point.
struct Value {
  Dims dims;  // {} = scalar
  std::vector<double> data;
  bool real = false;

  bool operator==(const Value&) const = default;
};

int64_t Elements(const Dims& dims);

// An initializer's or Constant's value; nullopt when it is too large, of a type the interpreter
// does not hold, or stored without its values.
std::optional<Value> TensorValue(const onnx::TensorProto& t);

// Whether an ONNX element type is floating point.
bool IsReal(int32_t onnx_type);

// Numpy broadcasting of two shapes.
std::optional<Dims> Broadcast(const Dims& a, const Dims& b);

// A negative axis counted from the end; nullopt outside [-rank, rank).
std::optional<int64_t> Axis(int64_t axis, size_t rank);

// The indices a Slice keeps of an axis of length n.
std::vector<int64_t> SliceIndices(int64_t n, int64_t start, int64_t end, int64_t step);

// The shapes and values shape propagation knows, by tensor name.
struct Known {
  std::map<std::string, Dims> shapes;
  std::map<std::string, Value> values;
};

// One node and what is known of its inputs.
class NodeInputs {
 public:
  NodeInputs(const onnx::NodeProto& node, const Known& known) : node_(node), known_(known) {}

  const onnx::NodeProto& node() const { return node_; }
  int size() const { return node_.input_size(); }
  // Whether input i is given (optional inputs may be absent or named "").
  bool Present(int i) const { return i < node_.input_size() && !node_.input(i).empty(); }
  const Value* ValueOf(int i) const;
  const Dims* ShapeOf(int i) const;
  // A 1-D (or scalar) integer input's elements.
  std::optional<Dims> Ints(int i) const;
  // Axes of a node: its `axes` attribute (older opsets) or its input `input` (newer ones); {} when
  // neither is given.
  std::optional<Dims> Axes(int input) const;

  const onnx::AttributeProto* Attr(const char* name) const;
  int64_t IntAttr(const char* name, int64_t fallback) const;

 private:
  const onnx::NodeProto& node_;
  const Known& known_;
};

// The value of a node's first output, from its inputs' values; nullopt when they are not known
// or the op is not defined on them (an index out of range, a division by zero).
using Kernel = std::function<std::optional<Value>(const NodeInputs&)>;
// The shape of a node's first output, from its inputs' shapes and values.
using ShapeRule = std::function<std::optional<Dims>(const NodeInputs&)>;

namespace kernels {

Kernel Constant();
Kernel Shape();  // Shape, with its start and end attributes
Kernel Size();
Kernel ConstantOfShape();
Kernel Range();
Kernel Identity();
Kernel Cast();
// Reshape, Flatten, Squeeze, Unsqueeze: the data unchanged, the dims from the op's shape rule.
Kernel Reshaped(ShapeRule shape);
Kernel Transpose();
Kernel Gather();
Kernel Concat();
Kernel Slice();
// An element-wise op of one input; f returns nullopt where the op is undefined.
Kernel Unary(std::function<std::optional<double>(double)> f);
// An element-wise op of two broadcast inputs; `real` says whether either input is floating
// point. `compares`: the result is boolean whatever the inputs.
Kernel Binary(std::function<std::optional<double>(double, double, bool real)> f,
              bool compares = false);
Kernel Where();
// ReduceSum, ReduceProd, ReduceMax, ReduceMin: `init` and the accumulation.
Kernel Reduce(double init, double (*accumulate)(double, double));

}  // namespace kernels

// The range length of a Range node with known start, limit and delta.
std::optional<int64_t> RangeCount(const NodeInputs& in);

// The kept indices per axis of a Slice over `dims`.
std::optional<std::vector<std::vector<int64_t>>> SliceAxes(const NodeInputs& in, const Dims& dims);

}  // namespace dplace::io
