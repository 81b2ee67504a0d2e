// What dplace knows of each ONNX op type, in one table (ops.cc), a row per type: its FLOPs rule,
// the shape rule and small-tensor kernel shape propagation uses where ONNX's inference stops, the
// element type of its output, and its traits — what PyTorch's autograd keeps of it for the backward
// pass and whether its output is a view, how its inputs tell weights from data, which input ranks
// it can take. The importer, the shape propagation and the validation read the table; none of them
// compares op type names.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "dplace/io/onnx/flops.h"
#include "dplace/io/onnx/interpreter.h"

namespace dplace::io {

// What the backward pass of an op keeps, given which inputs require gradients (PyTorch 1.13's
// derivatives.yaml, read for the ops torch.onnx exports to these types).
struct OnnxSaved {
  bool output = true;  // the op's first output
  // Input `slot` is kept; `requires_grad(i)` says whether input i requires a gradient.
  template <typename RequiresGrad>
  bool Input(int slot, int num_inputs, RequiresGrad requires_grad) const;

  enum class Inputs : uint8_t {
    kNone,       // nothing of the inputs (add, concat, views, ...)
    kFirst,      // the first input (erf, batch norm, pooling, ...)
    kCondition,  // the first input, a condition or index (where)
    kIndices,    // the second input (gather's indices)
    kOthers,     // each input when another input requires a gradient (mul, matmul, conv, gemm)
    kDivisor,    // the divisor, and the dividend when the divisor requires a gradient (div)
    kAll,        // every input (op types the table does not know)
  } inputs = Inputs::kAll;
};

// The element type of an op's first output.
enum class OnnxOutputType : uint8_t {
  kFirstInput,   // its first input's (FLOAT without inputs)
  kSecondInput,  // Where: its second input's
  kBool,         // comparisons
  kInt64,        // shapes, sizes, indices
  kCastTo,       // the `to` attribute
  kValueAttr,    // the `value` attribute's tensor type (FLOAT without one)
};

// How an op's inputs decide whether a graph input is a weight (a parameter) or data: a graph input
// is a parameter unless something reads it as data (docs/onnx.md).
enum class OnnxWeightUse : uint8_t {
  kData,         // its first input is data
  kPassThrough,  // a weight stays a weight through it (transposed, reshaped, cast)
  kGather,       // its second input (indices) is data, its first may be an embedding table
  kAnySlot,      // any input may be a weight (a bias added, a class token concatenated)
};

// The input ranks an op can take, checked before ONNX's shape inference (which crashes on some).
enum class OnnxRanks : uint8_t {
  kAny,
  kSpatial,            // data of rank >= 3 (batch, channels, spatial): pooling
  kSpatialWithWeight,  // and a weight of the data's rank: Conv, ConvTranspose
  kSequence,           // inputs 0-2 of rank 3: LSTM, GRU, RNN
};

// How an op's first output aliases its first input (PyTorch's view ops); the importer follows the
// strides, so that a view PyTorch cannot make (a reshape of an expanded or transposed tensor that
// merges its strided dimensions) is a copy, as PyTorch's reshape makes it.
enum class OnnxView : uint8_t {
  kNone,       // a tensor of its own
  kSame,       // the same layout (Identity)
  kSameType,   // a view when the type does not change, else a copy (Cast: PyTorch's .to)
  kReshape,    // new sizes over the same elements (Reshape, Flatten, Squeeze, Unsqueeze)
  kPermute,    // permuted dimensions (Transpose)
  kBroadcast,  // dimensions of size 1 repeated with stride 0 (Expand)
  kSlice,      // a part of each dimension, strides kept (Slice, Split)
};

struct OnnxOp {
  std::string_view type;
  FlopsRule flops;  // empty: no formula (the importer estimates one FLOP per output element)
  ShapeRule shape;  // empty: ONNX's own inference only
  Kernel kernel;    // empty: its values are not evaluated
  OnnxOutputType output_type = OnnxOutputType::kFirstInput;
  bool indices_output = false;  // its second output is int64 indices shaped like the first (TopK)
  bool branches = false;        // control flow (If): costed by its branches
  // Autograd.
  OnnxView view = OnnxView::kNone;  // how its outputs alias its first input (allocate nothing)
  bool differentiable = true;       // false: no gradient (Shape, comparisons, ...)
  // Its backward runs one GEMM per operand that needs a gradient: the data (input 0) and the
  // weights (the other inputs), each about the forward's work (MatMul, Gemm, Conv, LSTM, ...).
  bool gemm = false;
  OnnxSaved saved;  // what its backward pass keeps (unknown types: everything)
  OnnxWeightUse weights = OnnxWeightUse::kData;
  OnnxRanks ranks = OnnxRanks::kAny;
  // Elementwise (PyTorch's TensorIterator): its output is laid out as its operands are, so the
  // tanh of a transposed tensor is transposed too (io/onnx/strides.h PointwiseStrides).
  bool pointwise = false;
};

// The table, sorted by type.
const std::vector<OnnxOp>& OnnxOps();

// The row of `type`; op types the table does not know get a row with no rules that keeps every
// input and its output (the conservative choice).
const OnnxOp& OnnxOpOf(std::string_view type);

template <typename RequiresGrad>
bool OnnxSaved::Input(int slot, int num_inputs, RequiresGrad requires_grad) const {
  auto another = [&] {
    for (int i = 0; i < num_inputs; ++i) {
      if (i != slot && requires_grad(i)) return true;
    }
    return false;
  };
  switch (inputs) {
    case Inputs::kNone:
      return false;
    case Inputs::kFirst:
    case Inputs::kCondition:
      return slot == 0;
    case Inputs::kIndices:
      return slot == 1;
    case Inputs::kOthers:
      return another();
    case Inputs::kDivisor:
      return slot == 1 || (slot == 0 && num_inputs > 1 && requires_grad(1));
    case Inputs::kAll:
      return true;
  }
  return true;
}

}  // namespace dplace::io
