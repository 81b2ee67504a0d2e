#include "dplace/io/onnx_autograd.h"

#include <map>
#include <set>
#include <string>

namespace dplace::io {
namespace {

using In = OnnxSaved::Inputs;

// PyTorch 1.13's derivatives.yaml, read for the ops torch.onnx exports to these types.
const std::map<std::string, OnnxSaved, std::less<>>& Table() {
  static const auto* table = new std::map<std::string, OnnxSaved, std::less<>>{
      // Views and shape ops: nothing.
      {"Reshape", {false, In::kNone}},
      {"Transpose", {false, In::kNone}},
      {"Squeeze", {false, In::kNone}},
      {"Unsqueeze", {false, In::kNone}},
      {"Flatten", {false, In::kNone}},
      {"Identity", {false, In::kNone}},
      {"Expand", {false, In::kNone}},
      {"Slice", {false, In::kNone}},
      {"Split", {false, In::kNone}},
      {"Concat", {false, In::kNone}},
      {"Tile", {false, In::kNone}},
      {"Pad", {false, In::kNone}},
      {"Cast", {false, In::kNone}},
      {"Dropout", {false, In::kNone}},
      {"Resize", {false, In::kNone}},
      {"Upsample", {false, In::kNone}},
      // Linear in their inputs: nothing.
      {"Add", {false, In::kNone}},
      {"Sub", {false, In::kNone}},
      {"Neg", {false, In::kNone}},
      {"ReduceSum", {false, In::kNone}},
      {"ReduceMean", {false, In::kNone}},
      {"Sum", {false, In::kNone}},
      {"Mean", {false, In::kNone}},
      // Selections keep their condition or indices.
      {"Where", {false, In::kCondition}},
      {"Gather", {false, In::kIndices}},
      {"GatherElements", {false, In::kIndices}},
      {"GatherND", {false, In::kIndices}},
      // Their result: relu, sigmoid, tanh, softmax, exp, sqrt, elu.
      {"Relu", {true, In::kNone}},
      {"Sigmoid", {true, In::kNone}},
      {"Tanh", {true, In::kNone}},
      {"Softmax", {true, In::kNone}},
      {"LogSoftmax", {true, In::kNone}},
      {"Exp", {true, In::kNone}},
      {"Sqrt", {true, In::kNone}},
      {"Elu", {true, In::kNone}},
      {"Reciprocal", {true, In::kNone}},
      // Their input.
      {"Erf", {false, In::kFirst}},
      {"Gelu", {false, In::kFirst}},
      {"Log", {false, In::kFirst}},
      {"Pow", {false, In::kFirst}},
      {"LeakyRelu", {false, In::kFirst}},
      {"HardSigmoid", {false, In::kFirst}},
      {"HardSwish", {false, In::kFirst}},
      {"Clip", {false, In::kFirst}},
      {"Abs", {false, In::kFirst}},
      {"Sin", {false, In::kFirst}},
      {"Cos", {false, In::kFirst}},
      {"Softplus", {false, In::kFirst}},
      {"PRelu", {false, In::kAll}},
      {"BatchNormalization", {false, In::kFirst}},
      {"LayerNormalization", {false, In::kFirst}},
      {"InstanceNormalization", {false, In::kFirst}},
      {"GroupNormalization", {false, In::kFirst}},
      {"MaxPool", {false, In::kFirst}},
      {"AveragePool", {false, In::kFirst}},
      {"GlobalAveragePool", {false, In::kFirst}},
      {"GlobalMaxPool", {false, In::kFirst}},
      {"ReduceMax", {true, In::kFirst}},
      {"ReduceMin", {true, In::kFirst}},
      // Bilinear: each input when another requires a gradient.
      {"Mul", {false, In::kOthers}},
      {"MatMul", {false, In::kOthers}},
      {"Gemm", {false, In::kOthers}},
      {"Conv", {false, In::kOthers}},
      {"ConvTranspose", {false, In::kOthers}},
      {"Einsum", {false, In::kOthers}},
      {"Div", {false, In::kDivisor}},
  };
  return *table;
}

const std::set<std::string, std::less<>> kViews = {"Reshape",   "Transpose", "Squeeze",
                                                   "Unsqueeze", "Flatten",   "Identity",
                                                   "Expand",    "Slice",     "Split"};

const std::set<std::string, std::less<>> kNotDifferentiable = {"Shape",
                                                               "Size",
                                                               "Equal",
                                                               "Less",
                                                               "Greater",
                                                               "LessOrEqual",
                                                               "GreaterOrEqual",
                                                               "Not",
                                                               "And",
                                                               "Or",
                                                               "Xor",
                                                               "ArgMax",
                                                               "ArgMin",
                                                               "NonZero",
                                                               "ConstantOfShape",
                                                               "Range",
                                                               "Constant",
                                                               "IsNaN",
                                                               "IsInf",
                                                               "Sign",
                                                               "Floor",
                                                               "Ceil",
                                                               "Round",
                                                               "TopK",
                                                               "OneHot",
                                                               "NonMaxSuppression"};

}  // namespace

bool OnnxOpIsView(std::string_view op_type) { return kViews.count(op_type) > 0; }

OnnxSaved OnnxSavedFor(std::string_view op_type) {
  const auto& table = Table();
  auto it = table.find(op_type);
  return it == table.end() ? OnnxSaved{true, In::kAll} : it->second;
}

bool OnnxOpIsDifferentiable(std::string_view op_type) {
  return kNotDifferentiable.count(op_type) == 0;
}

}  // namespace dplace::io
