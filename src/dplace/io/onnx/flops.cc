#include "dplace/io/onnx/flops.h"

#include <algorithm>

#include "dplace/io/onnx/ops.h"

namespace dplace::io {
namespace {

double Volume(const std::vector<int64_t>& dims) {
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
  return node.outputs.empty() ? 0 : Volume(node.outputs[0]);
}

double Bias(const OnnxNodeShapes& node) { return Has(node, 2) ? OutputElements(node) : 0; }

// Kernel volume: the attribute, else the weight's trailing dims (Conv: [Cout, Cin/g, k...]).
double KernelVolume(const OnnxNodeShapes& node) {
  if (!node.kernel_shape.empty()) return Volume(node.kernel_shape);
  const std::vector<int64_t>& w = Input(node, 1);
  double k = 1;
  for (size_t i = 2; i < w.size(); ++i) k *= Dim(w, static_cast<int>(i));
  return k;
}

}  // namespace

namespace flops_rules {

FlopsRule Conv() {
  return [](const OnnxNodeShapes& node) {
    const double cin_per_group = Dim(Input(node, 1), 1);
    return 2 * OutputElements(node) * cin_per_group * KernelVolume(node) + Bias(node);
  };
}

FlopsRule ConvTranspose() {
  // Each input element scatters into (output channels per group) x kernel volume outputs.
  return [](const OnnxNodeShapes& node) {
    const double cout_per_group = Dim(Input(node, 1), 1);
    return 2 * Volume(Input(node, 0)) * cout_per_group * KernelVolume(node) + Bias(node);
  };
}

FlopsRule MatMul() {
  return
      [](const OnnxNodeShapes& node) { return 2 * OutputElements(node) * Dim(Input(node, 0), -1); };
}

FlopsRule Gemm() {
  return [](const OnnxNodeShapes& node) {
    const double k = node.trans_a ? Dim(Input(node, 0), 0) : Dim(Input(node, 0), 1);
    return 2 * OutputElements(node) * k + Bias(node);
  };
}

FlopsRule Recurrent() {
  // X [seq, batch, input], W [dirs, gates x hidden, input], R [dirs, gates x hidden, hidden].
  return [](const OnnxNodeShapes& node) {
    const std::vector<int64_t>& x = Input(node, 0);
    const std::vector<int64_t>& r = Input(node, 2);
    const double seq = Dim(x, 0), batch = Dim(x, 1), input = Dim(x, 2);
    const double dirs = Dim(r, 0), gates_hidden = Dim(r, 1), hidden = Dim(r, 2);
    const double gates = gates_hidden / std::max(hidden, 1.0);
    const double matmuls = 2 * seq * batch * dirs * gates_hidden * (input + hidden);
    return matmuls + seq * batch * dirs * hidden * (3 * gates + 2);  // gate activations, state
  };
}

FlopsRule PerOutput(double per_element) {
  return [per_element](const OnnxNodeShapes& node) { return per_element * OutputElements(node); };
}

FlopsRule Pooling() {
  return [](const OnnxNodeShapes& node) { return OutputElements(node) * KernelVolume(node); };
}

FlopsRule PerInput() {
  return [](const OnnxNodeShapes& node) { return Volume(Input(node, 0)); };
}

FlopsRule NonMaxSuppression() {
  // boxes [batch, n, 4], scores [batch, classes, n]: every pair per class.
  return [](const OnnxNodeShapes& node) {
    const double n = Dim(Input(node, 0), 1);
    return Dim(Input(node, 1), 0) * Dim(Input(node, 1), 1) * n * n;
  };
}

FlopsRule None() {
  return [](const OnnxNodeShapes&) { return 0.0; };
}

}  // namespace flops_rules

double OnnxNodeFlops(const OnnxNodeShapes& node) {
  const OnnxOp& op = OnnxOpOf(node.op_type);
  return op.flops ? op.flops(node) : -1;
}

}  // namespace dplace::io
