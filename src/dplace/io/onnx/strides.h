// The strides of PyTorch's views, for telling which ONNX view ops PyTorch makes as views and which
// it must copy: a reshape of a tensor whose dimensions are no longer laid out one after another (an
// expanded tensor's stride-0 dimensions, a transposed tensor's) copies when it merges them.
// Sizes and strides are in elements; a dimension of unknown size (-1) counts as 1.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace dplace::io {

using Strides = std::vector<int64_t>;

// Row-major strides of a fresh tensor of `dims`.
Strides ContiguousStrides(const std::vector<int64_t>& dims);

// The strides of `dims` viewed as `new_dims` over the same elements, as PyTorch's view computes
// them (ATen's computeStride), or nullopt when no view can (reshape then copies).
std::optional<Strides> ReshapedStrides(const std::vector<int64_t>& dims, const Strides& strides,
                                       const std::vector<int64_t>& new_dims);

// The strides of an expand of `dims` to `new_dims` (numpy broadcasting, aligned on the last
// dimension): a repeated dimension gets stride 0.
Strides ExpandedStrides(const std::vector<int64_t>& dims, const Strides& strides,
                        const std::vector<int64_t>& new_dims);

// The strides after permuting the dimensions (output dimension i is input dimension perm[i]);
// an empty perm reverses them, as ONNX's Transpose does. nullopt for a perm that is no
// permutation of the dimensions.
std::optional<Strides> PermutedStrides(const Strides& strides, const std::vector<int64_t>& perm);

// One operand of a pointwise op: its sizes and strides.
struct StridedOperand {
  std::vector<int64_t> dims;
  Strides strides;
};

// The strides of a pointwise op's output of `dims` (PyTorch's TensorIterator: an elementwise op
// lays its output out as its operands are laid out, so the tanh of a transposed tensor is
// transposed too). The dimensions are ordered as TensorIterator orders them: by the first operand
// whose strides tell two dimensions apart (a broadcast dimension tells nothing), equal strides by
// size; the output is dense in that order.
Strides PointwiseStrides(const std::vector<int64_t>& dims,
                         const std::vector<StridedOperand>& operands);

}  // namespace dplace::io
