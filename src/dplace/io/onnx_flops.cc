// FLOPs of an ONNX node from its type and shapes (docs/onnx.md lists the formulas):
//   2 x multiply-accumulates for Conv, ConvTranspose, MatMul, Gemm and the RNN ops;
//   one per output element for element-wise ops, a few per element for normalisations;
//   kernel size per output element for pooling, one per input element for reductions;
//   none for ops that only move or reshape data.
#include <algorithm>
#include <set>
#include <string>

#include "dplace/io/onnx_model.h"

namespace dplace::io {
namespace {

double Elements(const std::vector<int64_t>& dims) {
  double n = 1;
  for (int64_t d : dims) n *= static_cast<double>(std::max<int64_t>(d, 1));
  return n;
}

double Dim(const std::vector<int64_t>& dims, int i) {  // negative i counts from the end
  const int n = static_cast<int>(dims.size());
  if (i < 0) i += n;
  if (i < 0 || i >= n) return 1;
  return static_cast<double>(std::max<int64_t>(dims[static_cast<size_t>(i)], 1));
}

const std::vector<int64_t>& Input(const OnnxNodeShapes& node, size_t i) {
  static const std::vector<int64_t> kNone;
  return i < node.inputs.size() ? node.inputs[i] : kNone;
}

bool Has(const OnnxNodeShapes& node, size_t i) {
  return i < node.inputs.size() && !node.inputs[i].empty();
}

double OutputElements(const OnnxNodeShapes& node) {
  return node.outputs.empty() ? 0 : Elements(node.outputs[0]);
}

// Kernel volume: the attribute, else the weight's trailing dims (Conv: [Cout, Cin/g, k...]).
double KernelVolume(const OnnxNodeShapes& node) {
  if (!node.kernel_shape.empty()) return Elements(node.kernel_shape);
  const std::vector<int64_t>& w = Input(node, 1);
  double k = 1;
  for (size_t i = 2; i < w.size(); ++i) k *= Dim(w, static_cast<int>(i));
  return k;
}

const std::set<std::string, std::less<>> kElementwise = {"Abs",
                                                         "Acos",
                                                         "Acosh",
                                                         "Add",
                                                         "And",
                                                         "Asin",
                                                         "Asinh",
                                                         "Atan",
                                                         "Atanh",
                                                         "BitShift",
                                                         "Ceil",
                                                         "Celu",
                                                         "Clip",
                                                         "Cos",
                                                         "Cosh",
                                                         "DequantizeLinear",
                                                         "Div",
                                                         "Elu",
                                                         "Equal",
                                                         "Erf",
                                                         "Exp",
                                                         "Floor",
                                                         "Gelu",
                                                         "Greater",
                                                         "GreaterOrEqual",
                                                         "HardSigmoid",
                                                         "HardSwish",
                                                         "IsInf",
                                                         "IsNaN",
                                                         "LeakyRelu",
                                                         "Less",
                                                         "LessOrEqual",
                                                         "Log",
                                                         "Max",
                                                         "Mean",
                                                         "Min",
                                                         "Mish",
                                                         "Mod",
                                                         "Mul",
                                                         "Neg",
                                                         "Not",
                                                         "Or",
                                                         "Pow",
                                                         "PRelu",
                                                         "QuantizeLinear",
                                                         "Reciprocal",
                                                         "Relu",
                                                         "Round",
                                                         "Selu",
                                                         "Shrink",
                                                         "Sigmoid",
                                                         "Sign",
                                                         "Sin",
                                                         "Sinh",
                                                         "Softplus",
                                                         "Softsign",
                                                         "Sqrt",
                                                         "Sub",
                                                         "Sum",
                                                         "Tan",
                                                         "Tanh",
                                                         "ThresholdedRelu",
                                                         "Where",
                                                         "Xor",
                                                         "Resize",
                                                         "Upsample"};

// FLOPs per output element of the normalisations and softmaxes.
double NormalisationCost(std::string_view type) {
  if (type == "BatchNormalization") return 2;
  if (type == "Softmax" || type == "LogSoftmax" || type == "LpNormalization") return 3;
  if (type == "LayerNormalization" || type == "InstanceNormalization" ||
      type == "GroupNormalization" || type == "MeanVarianceNormalization" || type == "LRN") {
    return 5;
  }
  return 0;
}

const std::set<std::string, std::less<>> kPerInputElement = {
    "GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool", "ReduceL1",  "ReduceL2",   "ReduceLogSum",
    "ReduceLogSumExp",   "ReduceMax",     "ReduceMean",   "ReduceMin", "ReduceProd", "ReduceSum",
    "ReduceSumSquare",   "ArgMax",        "ArgMin",       "TopK",      "CumSum",     "Hardmax"};

const std::set<std::string, std::less<>> kDataMovement = {"Cast",
                                                          "CastLike",
                                                          "Compress",
                                                          "Concat",
                                                          "Constant",
                                                          "ConstantOfShape",
                                                          "DepthToSpace",
                                                          "Dropout",
                                                          "Expand",
                                                          "EyeLike",
                                                          "Flatten",
                                                          "Gather",
                                                          "GatherElements",
                                                          "GatherND",
                                                          "Identity",
                                                          "NonZero",
                                                          "OneHot",
                                                          "Pad",
                                                          "Range",
                                                          "Reshape",
                                                          "ReverseSequence",
                                                          "Scatter",
                                                          "ScatterElements",
                                                          "ScatterND",
                                                          "Shape",
                                                          "Size",
                                                          "Slice",
                                                          "SpaceToDepth",
                                                          "Split",
                                                          "Squeeze",
                                                          "Tile",
                                                          "Transpose",
                                                          "Trilu",
                                                          "Unsqueeze"};

}  // namespace

double OnnxNodeFlops(const OnnxNodeShapes& node) {
  const std::string_view type = node.op_type;
  const double out = OutputElements(node);
  if (type == "Conv") {
    // 2 x output elements x (input channels per group) x kernel volume, plus the bias.
    const double cin_per_group = Dim(Input(node, 1), 1);
    return 2 * out * cin_per_group * KernelVolume(node) + (Has(node, 2) ? out : 0);
  }
  if (type == "ConvTranspose") {
    // Each input element scatters into (output channels per group) x kernel volume outputs.
    const double cout_per_group = Dim(Input(node, 1), 1);
    return 2 * Elements(Input(node, 0)) * cout_per_group * KernelVolume(node) +
           (Has(node, 2) ? out : 0);
  }
  if (type == "MatMul" || type == "MatMulInteger") {
    return 2 * out * Dim(Input(node, 0), -1);
  }
  if (type == "Gemm") {
    const double k = node.trans_a ? Dim(Input(node, 0), 0) : Dim(Input(node, 0), 1);
    return 2 * out * k + (Has(node, 2) ? out : 0);
  }
  if (type == "LSTM" || type == "GRU" || type == "RNN") {
    // X [seq, batch, input], W [dirs, gates x hidden, input], R [dirs, gates x hidden, hidden].
    const std::vector<int64_t>& x = Input(node, 0);
    const std::vector<int64_t>& r = Input(node, 2);
    const double seq = Dim(x, 0), batch = Dim(x, 1), input = Dim(x, 2);
    const double dirs = Dim(r, 0), gates_hidden = Dim(r, 1), hidden = Dim(r, 2);
    const double gates = gates_hidden / std::max(hidden, 1.0);
    const double matmuls = 2 * seq * batch * dirs * gates_hidden * (input + hidden);
    return matmuls + seq * batch * dirs * hidden * (3 * gates + 2);  // gate activations, state
  }
  if (kElementwise.count(type)) return out;
  if (const double per = NormalisationCost(type); per > 0) return per * out;
  if (type == "MaxPool" || type == "AveragePool" || type == "LpPool" || type == "MaxRoiPool") {
    return out * KernelVolume(node);
  }
  if (kPerInputElement.count(type)) return Elements(Input(node, 0));
  if (type == "RoiAlign") return 4 * out;  // a bilinear sample per output
  if (type == "NonMaxSuppression") {
    // boxes [batch, n, 4], scores [batch, classes, n]: every pair per class.
    const double n = Dim(Input(node, 0), 1);
    return Dim(Input(node, 1), 0) * Dim(Input(node, 1), 1) * n * n;
  }
  if (kDataMovement.count(type)) return 0;
  return -1;
}

}  // namespace dplace::io
