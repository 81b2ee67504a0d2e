#include "dplace/io/onnx/ops.h"

#include <algorithm>
#include <cmath>

#include "dplace/io/onnx/shape_rules.h"

namespace dplace::io {
namespace {

namespace f = flops_rules;
namespace s = shape_rules;
namespace k = kernels;
using In = OnnxSaved::Inputs;
using Type = OnnxOutputType;
using Weights = OnnxWeightUse;
using View = OnnxView;

// What the backward pass keeps.
constexpr OnnxSaved kNothing{.output = false, .inputs = In::kNone};  // views, linear ops
constexpr OnnxSaved kResult{.output = true, .inputs = In::kNone};    // relu, sigmoid, exp, ...
constexpr OnnxSaved kInput{.output = false, .inputs = In::kFirst};   // erf, norms, pooling, ...
constexpr OnnxSaved kResultAndInput{.output = true, .inputs = In::kFirst};  // max, min
constexpr OnnxSaved kCondition{.output = false, .inputs = In::kCondition};
constexpr OnnxSaved kIndices{.output = false, .inputs = In::kIndices};
constexpr OnnxSaved kOthers{.output = false, .inputs = In::kOthers};  // bilinear
constexpr OnnxSaved kDivisor{.output = false, .inputs = In::kDivisor};
constexpr OnnxSaved kInputs{.output = false, .inputs = In::kAll};

Kernel Add() {
  return k::Binary([](double a, double b, bool) -> std::optional<double> { return a + b; });
}
Kernel Sub() {
  return k::Binary([](double a, double b, bool) -> std::optional<double> { return a - b; });
}
Kernel Mul() {
  return k::Binary([](double a, double b, bool) -> std::optional<double> { return a * b; });
}
Kernel Div() {
  return k::Binary([](double a, double b, bool real) -> std::optional<double> {
    if (b == 0) return std::nullopt;
    return real ? a / b : std::trunc(a / b);
  });
}
Kernel Mod() {
  return k::Binary([](double a, double b, bool) -> std::optional<double> {
    if (b == 0) return std::nullopt;
    return std::fmod(a, b);
  });
}
Kernel Pow() {
  return k::Binary(
      [](double a, double b, bool) -> std::optional<double> { return std::pow(a, b); });
}
Kernel Min() {
  return k::Binary(
      [](double a, double b, bool) -> std::optional<double> { return std::min(a, b); });
}
Kernel Max() {
  return k::Binary(
      [](double a, double b, bool) -> std::optional<double> { return std::max(a, b); });
}
Kernel And() {
  return k::Binary(
      [](double a, double b, bool) -> std::optional<double> { return double(a != 0 && b != 0); });
}
Kernel Or() {
  return k::Binary(
      [](double a, double b, bool) -> std::optional<double> { return double(a != 0 || b != 0); });
}
Kernel Compare(bool (*holds)(double, double)) {
  return k::Binary(
      [holds](double a, double b, bool) -> std::optional<double> { return double(holds(a, b)); },
      /*compares=*/true);
}
Kernel Unary(double (*f)(double)) {
  return k::Unary([f](double x) -> std::optional<double> { return f(x); });
}
Kernel Reciprocal() {
  return k::Unary([](double x) -> std::optional<double> {
    if (x == 0) return std::nullopt;
    return 1 / x;
  });
}

std::vector<OnnxOp> MakeTable() {
  const FlopsRule elementwise = f::PerOutput(1);
  std::vector<OnnxOp> ops = {
      {.type = "Abs",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Unary([](double x) { return std::abs(x); }),
       .saved = kInput,
       .pointwise = true},
      {.type = "Acos", .flops = elementwise, .pointwise = true},
      {.type = "Acosh", .flops = elementwise, .pointwise = true},
      {.type = "Add",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Add(),
       .saved = kNothing,
       .weights = Weights::kAnySlot,
       .pointwise = true},
      {.type = "And",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = And(),
       .differentiable = false,
       .pointwise = true},
      {.type = "ArgMax", .flops = f::PerInput(), .differentiable = false},
      {.type = "ArgMin", .flops = f::PerInput(), .differentiable = false},
      {.type = "Asin", .flops = elementwise, .pointwise = true},
      {.type = "Asinh", .flops = elementwise, .pointwise = true},
      {.type = "Atan", .flops = elementwise, .pointwise = true},
      {.type = "Atanh", .flops = elementwise, .pointwise = true},
      {.type = "AveragePool", .flops = f::Pooling(), .saved = kInput, .ranks = OnnxRanks::kSpatial},
      {.type = "BatchNormalization", .flops = f::PerOutput(2), .saved = kInput},
      {.type = "BitShift", .flops = elementwise, .pointwise = true},
      {.type = "Cast",
       .flops = f::None(),
       .shape = s::Broadcast(),
       .kernel = k::Cast(),
       .output_type = Type::kCastTo,
       .view = View::kSameType,
       .saved = kNothing,
       .weights = Weights::kPassThrough,
       .pointwise = true},
      {.type = "CastLike", .flops = f::None(), .pointwise = true},
      {.type = "Ceil",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Unary([](double x) { return std::ceil(x); }),
       .differentiable = false,
       .pointwise = true},
      {.type = "Celu", .flops = elementwise, .pointwise = true},
      {.type = "Clip",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .saved = kInput,
       .pointwise = true},
      {.type = "Compress", .flops = f::None()},
      {.type = "Concat",
       .flops = f::None(),
       .kernel = k::Concat(),
       .saved = kNothing,
       .weights = Weights::kAnySlot},
      {.type = "Constant", .flops = f::None(), .kernel = k::Constant(), .differentiable = false},
      {.type = "ConstantOfShape",
       .flops = f::None(),
       .shape = s::ConstantOfShape(),
       .kernel = k::ConstantOfShape(),
       .output_type = Type::kValueAttr,
       .differentiable = false},
      {.type = "Conv",
       .flops = f::Conv(),
       .gemm = true,
       .saved = kOthers,
       .ranks = OnnxRanks::kSpatialWithWeight},
      {.type = "ConvTranspose",
       .flops = f::ConvTranspose(),
       .gemm = true,
       .saved = kOthers,
       .ranks = OnnxRanks::kSpatialWithWeight},
      {.type = "Cos", .flops = elementwise, .saved = kInput, .pointwise = true},
      {.type = "Cosh", .flops = elementwise, .pointwise = true},
      {.type = "CumSum", .flops = f::PerInput()},
      {.type = "DepthToSpace", .flops = f::None()},
      {.type = "DequantizeLinear", .flops = elementwise, .pointwise = true},
      {.type = "Div",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Div(),
       .saved = kDivisor,
       .weights = Weights::kAnySlot,
       .pointwise = true},
      {.type = "Dropout", .flops = f::None(), .saved = kNothing, .pointwise = true},
      {.type = "Einsum", .gemm = true, .saved = kOthers},
      {.type = "Elu", .flops = elementwise, .saved = kResult, .pointwise = true},
      {.type = "Equal",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Compare([](double a, double b) { return a == b; }),
       .output_type = Type::kBool,
       .differentiable = false,
       .pointwise = true},
      {.type = "Erf", .flops = elementwise, .saved = kInput, .pointwise = true},
      {.type = "Exp",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .saved = kResult,
       .pointwise = true},
      {.type = "Expand",
       .flops = f::None(),
       .shape = s::Expand(),
       .view = View::kBroadcast,
       .saved = kNothing,
       .weights = Weights::kPassThrough},
      {.type = "EyeLike", .flops = f::None()},
      {.type = "Flatten",
       .flops = f::None(),
       .shape = s::Flatten(),
       .kernel = k::Reshaped(s::Flatten()),
       .view = View::kReshape,
       .saved = kNothing},
      {.type = "Floor",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Unary([](double x) { return std::floor(x); }),
       .differentiable = false,
       .pointwise = true},
      {.type = "GRU", .flops = f::Recurrent(), .gemm = true, .ranks = OnnxRanks::kSequence},
      {.type = "Gather",
       .flops = f::None(),
       .shape = s::Gather(),
       .kernel = k::Gather(),
       .saved = kIndices,
       .weights = Weights::kGather},
      {.type = "GatherElements",
       .flops = f::None(),
       .saved = kIndices,
       .weights = Weights::kGather},
      {.type = "GatherND", .flops = f::None(), .saved = kIndices, .weights = Weights::kGather},
      {.type = "Gelu", .flops = elementwise, .saved = kInput, .pointwise = true},
      {.type = "Gemm", .flops = f::Gemm(), .gemm = true, .saved = kOthers},
      {.type = "GlobalAveragePool", .flops = f::PerInput(), .saved = kInput},
      {.type = "GlobalLpPool", .flops = f::PerInput()},
      {.type = "GlobalMaxPool", .flops = f::PerInput(), .saved = kInput},
      {.type = "Greater",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Compare([](double a, double b) { return a > b; }),
       .output_type = Type::kBool,
       .differentiable = false,
       .pointwise = true},
      {.type = "GreaterOrEqual",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .output_type = Type::kBool,
       .differentiable = false,
       .pointwise = true},
      {.type = "GroupNormalization", .flops = f::PerOutput(5), .saved = kInput},
      {.type = "HardSigmoid", .flops = elementwise, .saved = kInput, .pointwise = true},
      {.type = "HardSwish", .flops = elementwise, .saved = kInput, .pointwise = true},
      {.type = "Hardmax", .flops = f::PerInput()},
      {.type = "Identity",
       .flops = f::None(),
       .kernel = k::Identity(),
       .view = View::kSame,
       .saved = kNothing,
       .weights = Weights::kPassThrough},
      {.type = "If", .branches = true},
      {.type = "InstanceNormalization", .flops = f::PerOutput(5), .saved = kInput},
      {.type = "IsInf", .flops = elementwise, .differentiable = false, .pointwise = true},
      {.type = "IsNaN", .flops = elementwise, .differentiable = false, .pointwise = true},
      {.type = "LRN", .flops = f::PerOutput(5)},
      {.type = "LSTM", .flops = f::Recurrent(), .gemm = true, .ranks = OnnxRanks::kSequence},
      {.type = "LayerNormalization", .flops = f::PerOutput(5), .saved = kInput},
      {.type = "LeakyRelu", .flops = elementwise, .saved = kInput, .pointwise = true},
      {.type = "Less",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Compare([](double a, double b) { return a < b; }),
       .output_type = Type::kBool,
       .differentiable = false,
       .pointwise = true},
      {.type = "LessOrEqual",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .output_type = Type::kBool,
       .differentiable = false,
       .pointwise = true},
      {.type = "Log",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .saved = kInput,
       .pointwise = true},
      {.type = "LogSoftmax", .flops = f::PerOutput(3), .saved = kResult},
      {.type = "LpNormalization", .flops = f::PerOutput(3)},
      {.type = "LpPool", .flops = f::Pooling(), .ranks = OnnxRanks::kSpatial},
      {.type = "MatMul", .flops = f::MatMul(), .gemm = true, .saved = kOthers},
      {.type = "MatMulInteger", .flops = f::MatMul()},
      {.type = "Max",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Max(),
       .pointwise = true},
      {.type = "MaxPool", .flops = f::Pooling(), .saved = kInput, .ranks = OnnxRanks::kSpatial},
      {.type = "MaxRoiPool", .flops = f::Pooling()},
      {.type = "Mean", .flops = elementwise, .saved = kNothing, .pointwise = true},
      {.type = "MeanVarianceNormalization", .flops = f::PerOutput(5)},
      {.type = "Min",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Min(),
       .pointwise = true},
      {.type = "Mish", .flops = elementwise, .pointwise = true},
      {.type = "Mod",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Mod(),
       .pointwise = true},
      {.type = "Mul",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Mul(),
       .saved = kOthers,
       .weights = Weights::kAnySlot,
       .pointwise = true},
      {.type = "Neg",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Unary([](double x) { return -x; }),
       .saved = kNothing,
       .pointwise = true},
      {.type = "NonMaxSuppression",
       .flops = f::NonMaxSuppression(),
       .shape = s::NonMaxSuppression(),
       .output_type = Type::kInt64,
       .differentiable = false},
      {.type = "NonZero",
       .flops = f::None(),
       .shape = s::NonZero(),
       .output_type = Type::kInt64,
       .differentiable = false},
      {.type = "Not",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Unary([](double x) { return double(x == 0); }),
       .output_type = Type::kBool,
       .differentiable = false,
       .pointwise = true},
      {.type = "OneHot", .flops = f::None(), .differentiable = false},
      {.type = "Or",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Or(),
       .differentiable = false,
       .pointwise = true},
      {.type = "PRelu", .flops = elementwise, .saved = kInputs, .pointwise = true},
      {.type = "Pad", .flops = f::None(), .shape = s::Pad(), .saved = kNothing},
      {.type = "Pow",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Pow(),
       .saved = kInput,
       .weights = Weights::kAnySlot,
       .pointwise = true},
      {.type = "QuantizeLinear", .flops = elementwise, .pointwise = true},
      {.type = "RNN", .flops = f::Recurrent(), .gemm = true, .ranks = OnnxRanks::kSequence},
      {.type = "Range",
       .flops = f::None(),
       .shape = s::Range(),
       .kernel = k::Range(),
       .differentiable = false},
      {.type = "Reciprocal",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Reciprocal(),
       .saved = kResult,
       .pointwise = true},
      {.type = "ReduceL1", .flops = f::PerInput()},
      {.type = "ReduceL2", .flops = f::PerInput()},
      {.type = "ReduceLogSum", .flops = f::PerInput()},
      {.type = "ReduceLogSumExp", .flops = f::PerInput()},
      {.type = "ReduceMax",
       .flops = f::PerInput(),
       .kernel = k::Reduce(-HUGE_VAL, [](double r, double x) { return std::max(r, x); }),
       .saved = kResultAndInput},
      {.type = "ReduceMean", .flops = f::PerInput(), .saved = kInput},  // torch 1.13's mean(dim)
      {.type = "ReduceMin",
       .flops = f::PerInput(),
       .kernel = k::Reduce(HUGE_VAL, [](double r, double x) { return std::min(r, x); }),
       .saved = kResultAndInput},
      {.type = "ReduceProd",
       .flops = f::PerInput(),
       .kernel = k::Reduce(1, [](double r, double x) { return r * x; })},
      {.type = "ReduceSum",
       .flops = f::PerInput(),
       .kernel = k::Reduce(0, [](double r, double x) { return r + x; }),
       .saved = kNothing},
      {.type = "ReduceSumSquare", .flops = f::PerInput()},
      {.type = "Relu",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .saved = kResult,
       .pointwise = true},
      {.type = "Reshape",
       .flops = f::None(),
       .shape = s::Reshape(),
       .kernel = k::Reshaped(s::Reshape()),
       .view = View::kReshape,
       .saved = kNothing,
       .weights = Weights::kPassThrough},
      {.type = "Resize", .flops = elementwise, .shape = s::Resize(2), .saved = kNothing},
      {.type = "ReverseSequence", .flops = f::None()},
      {.type = "RoiAlign", .flops = f::PerOutput(4)},  // a bilinear sample per output
      {.type = "Round",
       .flops = elementwise,
       .kernel = Unary([](double x) { return std::nearbyint(x); }),
       .differentiable = false,
       .pointwise = true},
      {.type = "Scatter", .flops = f::None(), .saved = kIndices},
      {.type = "ScatterElements", .flops = f::None(), .saved = kIndices},
      {.type = "ScatterND", .flops = f::None(), .saved = kIndices},
      {.type = "Selu", .flops = elementwise, .pointwise = true},
      {.type = "Shape",
       .flops = f::None(),
       .kernel = k::Shape(),
       .output_type = Type::kInt64,
       .differentiable = false},
      {.type = "Shrink", .flops = elementwise, .pointwise = true},
      {.type = "Sigmoid",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .saved = kResult,
       .pointwise = true},
      {.type = "Sign", .flops = elementwise, .differentiable = false, .pointwise = true},
      {.type = "Sin", .flops = elementwise, .saved = kInput, .pointwise = true},
      {.type = "Sinh", .flops = elementwise, .pointwise = true},
      {.type = "Size",
       .flops = f::None(),
       .kernel = k::Size(),
       .output_type = Type::kInt64,
       .differentiable = false},
      {.type = "Slice",
       .flops = f::None(),
       .shape = s::Slice(),
       .kernel = k::Slice(),
       .view = View::kSlice,
       .saved = kNothing,
       .weights = Weights::kPassThrough},
      {.type = "Softmax", .flops = f::PerOutput(3), .saved = kResult},
      {.type = "Softplus", .flops = elementwise, .saved = kInput, .pointwise = true},
      {.type = "Softsign", .flops = elementwise, .pointwise = true},
      {.type = "SpaceToDepth", .flops = f::None()},
      {.type = "Split",
       .flops = f::None(),
       .view = View::kSlice,
       .saved = kNothing,
       .weights = Weights::kPassThrough},
      {.type = "Sqrt",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Unary([](double x) { return std::sqrt(x); }),
       .saved = kResult,
       .pointwise = true},
      {.type = "Squeeze",
       .flops = f::None(),
       .shape = s::Squeeze(),
       .kernel = k::Reshaped(s::Squeeze()),
       .view = View::kReshape,
       .saved = kNothing,
       .weights = Weights::kPassThrough},
      {.type = "Sub",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = Sub(),
       .saved = kNothing,
       .weights = Weights::kAnySlot,
       .pointwise = true},
      {.type = "Sum", .flops = elementwise, .saved = kNothing, .pointwise = true},
      {.type = "Tan", .flops = elementwise, .pointwise = true},
      {.type = "Tanh", .flops = elementwise, .saved = kResult, .pointwise = true},
      {.type = "ThresholdedRelu", .flops = elementwise, .pointwise = true},
      {.type = "Tile", .flops = f::None(), .shape = s::Tile(), .saved = kNothing},
      {.type = "TopK",
       .flops = f::PerInput(),
       .shape = s::TopK(),
       .indices_output = true,
       .differentiable = false},
      {.type = "Transpose",
       .flops = f::None(),
       .kernel = k::Transpose(),
       .view = View::kPermute,
       .saved = kNothing,
       .weights = Weights::kPassThrough},
      {.type = "Trilu", .flops = f::None()},
      {.type = "Unsqueeze",
       .flops = f::None(),
       .shape = s::Unsqueeze(),
       .kernel = k::Reshaped(s::Unsqueeze()),
       .view = View::kReshape,
       .saved = kNothing,
       .weights = Weights::kPassThrough},
      {.type = "Upsample", .flops = elementwise, .shape = s::Resize(1), .saved = kNothing},
      {.type = "Where",
       .flops = elementwise,
       .shape = s::Broadcast(),
       .kernel = k::Where(),
       .output_type = Type::kSecondInput,
       .saved = kCondition,
       .pointwise = true},
      {.type = "Xor", .flops = elementwise, .differentiable = false, .pointwise = true},
  };
  std::sort(ops.begin(), ops.end(),
            [](const OnnxOp& a, const OnnxOp& b) { return a.type < b.type; });
  return ops;
}

}  // namespace

const std::vector<OnnxOp>& OnnxOps() {
  static const auto* table = new std::vector<OnnxOp>(MakeTable());
  return *table;
}

const OnnxOp& OnnxOpOf(std::string_view type) {
  static const OnnxOp kUnknown{};
  const std::vector<OnnxOp>& ops = OnnxOps();
  auto it = std::lower_bound(ops.begin(), ops.end(), type,
                             [](const OnnxOp& op, std::string_view t) { return op.type < t; });
  return it != ops.end() && it->type == type ? *it : kUnknown;
}

}  // namespace dplace::io
