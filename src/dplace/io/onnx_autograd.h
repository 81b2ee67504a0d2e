// What PyTorch's eager autograd keeps of an ONNX op for the backward pass, and which ops are views.
//
// A table per ONNX op type (as torch.onnx exports PyTorch's ops): whether the op's output aliases
// its first input (reshape, transpose, ... : a view allocates nothing), and which of its inputs and
// whether its output the backward pass keeps. The ONNX importer marks the graph with it
// (Edge::saved, Op::saves_output, Tensor::view); the training expansion and the step simulator's
// memory model read the marks. It knows op types, not graphs: decomposed functions (GELU,
// LayerNorm at opsets below 17) are recognised by the importer, which overrides the table there.
#pragma once

#include <string_view>

namespace dplace::io {

// Whether the op's first output is a view of its first input (PyTorch returns an alias).
bool OnnxOpIsView(std::string_view op_type);

// What the backward pass of an op of this type keeps, given which inputs require gradients.
struct OnnxSaved {
  bool output = false;  // the op's first output
  // Input `slot` is kept; `requires_grad[i]` says whether input i requires a gradient.
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

// The table's entry for `op_type`; op types it does not know keep every input and their output
// (the conservative choice).
OnnxSaved OnnxSavedFor(std::string_view op_type);

// Whether an op of this type has a gradient at all (Shape, comparisons, ... do not), so that its
// output requires a gradient when an input does.
bool OnnxOpIsDifferentiable(std::string_view op_type);

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
