// FLOPs of an ONNX node from its type and shapes (docs/onnx.md lists the formulas): 2 x
// multiply-accumulates for Conv, ConvTranspose, MatMul, Gemm and the RNN ops; a constant per output
// element for element-wise ops and normalisations; kernel size per output element for pooling, one
// per input element for reductions; none for ops that only move or reshape data. The op table
// (ops.h) says which rule an op type takes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace dplace::io {

// A node's attributes and tensor shapes as the FLOPs rules take them. Dims of -1 are unknown
// (taken as 1).
struct OnnxNodeShapes {
  std::string op_type;
  std::vector<std::vector<int64_t>> inputs, outputs;  // empty vector: absent optional input
  std::vector<int64_t> kernel_shape;                  // attribute, when given
  int64_t group = 1;
  int64_t trans_a = 0, trans_b = 0;
};

using FlopsRule = std::function<double(const OnnxNodeShapes&)>;

namespace flops_rules {

FlopsRule Conv();           // 2 x outputs x input channels per group x kernel volume (+ bias)
FlopsRule ConvTranspose();  // 2 x inputs x output channels per group x kernel volume (+ bias)
FlopsRule MatMul();         // 2 x outputs x the inner dimension
FlopsRule Gemm();           // as MatMul, transA read, plus the bias
FlopsRule Recurrent();      // LSTM, GRU, RNN: the gates' matmuls and activations per step
FlopsRule PerOutput(double per_element);  // element-wise ops, normalisations
FlopsRule Pooling();                      // kernel volume per output element
FlopsRule PerInput();                     // one per input element: reductions, global pooling
FlopsRule NonMaxSuppression();            // every pair of boxes per class
FlopsRule None();                         // data movement

}  // namespace flops_rules

// FLOPs of one node from the op table's rule for its type, or -1 when dplace has no formula for
// the type.
double OnnxNodeFlops(const OnnxNodeShapes& node);

}  // namespace dplace::io
