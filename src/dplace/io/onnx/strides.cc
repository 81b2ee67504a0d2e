#include "dplace/io/onnx/strides.h"

#include <algorithm>

namespace dplace::io {
namespace {

int64_t Size(int64_t d) { return std::max<int64_t>(d, 1); }

}  // namespace

Strides ContiguousStrides(const std::vector<int64_t>& dims) {
  Strides strides(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) strides[i - 1] = strides[i] * Size(dims[i]);
  return strides;
}

std::optional<Strides> ReshapedStrides(const std::vector<int64_t>& dims, const Strides& strides,
                                       const std::vector<int64_t>& new_dims) {
  if (dims.empty() || dims.size() != strides.size()) return ContiguousStrides(new_dims);
  int64_t numel = 1;
  for (int64_t d : dims) numel *= Size(d);
  if (numel == 1) return ContiguousStrides(new_dims);
  // Walk the old dimensions from the last, in chunks whose elements lie one after another, and
  // give each chunk's new dimensions strides inside it; a new dimension straddling two chunks has
  // no stride.
  Strides out(new_dims.size(), 1);
  auto view_d = static_cast<int64_t>(new_dims.size()) - 1;
  int64_t chunk_base_stride = strides.back();
  int64_t tensor_numel = 1, view_numel = 1;
  for (auto d = static_cast<int64_t>(dims.size()) - 1; d >= 0; --d) {
    tensor_numel *= Size(dims[d]);
    const bool chunk_ends =
        d == 0 || (Size(dims[d - 1]) != 1 && strides[d - 1] != tensor_numel * chunk_base_stride);
    if (!chunk_ends) continue;
    while (view_d >= 0 && (view_numel < tensor_numel || Size(new_dims[view_d]) == 1)) {
      out[view_d] = view_numel * chunk_base_stride;
      view_numel *= Size(new_dims[view_d]);
      --view_d;
    }
    if (view_numel != tensor_numel) return std::nullopt;
    if (d > 0) {
      chunk_base_stride = strides[d - 1];
      tensor_numel = 1;
      view_numel = 1;
    }
  }
  if (view_d != -1) return std::nullopt;
  return out;
}

Strides ExpandedStrides(const std::vector<int64_t>& dims, const Strides& strides,
                        const std::vector<int64_t>& new_dims) {
  Strides out(new_dims.size(), 0);
  const auto offset = static_cast<int64_t>(new_dims.size()) - static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < static_cast<int64_t>(new_dims.size()); ++i) {
    const int64_t j = i - offset;
    if (j < 0 || j >= static_cast<int64_t>(strides.size())) continue;  // a new leading dimension
    out[i] = Size(dims[j]) == 1 && Size(new_dims[i]) != 1 ? 0 : strides[j];
  }
  return out;
}

std::optional<Strides> PermutedStrides(const Strides& strides, const std::vector<int64_t>& perm) {
  const auto n = static_cast<int64_t>(strides.size());
  if (perm.empty()) return Strides(strides.rbegin(), strides.rend());
  if (static_cast<int64_t>(perm.size()) != n) return std::nullopt;
  Strides out(strides.size());
  std::vector<char> used(strides.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t p = perm[i] < 0 ? perm[i] + n : perm[i];
    if (p < 0 || p >= n || used[p]) return std::nullopt;
    used[p] = 1;
    out[i] = strides[p];
  }
  return out;
}

Strides PointwiseStrides(const std::vector<int64_t>& dims,
                         const std::vector<StridedOperand>& operands) {
  const size_t n = dims.size();
  // Each operand's strides aligned on the output's last dimension; a dimension it broadcasts
  // (missing, or of size 1 where the output's is not) has stride 0.
  std::vector<Strides> aligned;
  for (const StridedOperand& op : operands) {
    if (op.dims.size() > n || op.strides.size() != op.dims.size()) continue;
    Strides s(n, 0);
    const size_t offset = n - op.dims.size();
    for (size_t i = 0; i < op.dims.size(); ++i) {
      s[offset + i] = Size(op.dims[i]) == 1 && Size(dims[offset + i]) != 1 ? 0 : op.strides[i];
    }
    aligned.push_back(std::move(s));
  }
  // ATen's reorder_dimensions: an insertion sort of the dimensions from the innermost, where a
  // comparison may be undecided.
  auto should_swap = [&](size_t dim0, size_t dim1) {
    for (const Strides& s : aligned) {
      if (s[dim0] == 0 || s[dim1] == 0) continue;
      if (s[dim0] < s[dim1]) return -1;
      if (s[dim0] > s[dim1]) return 1;
      if (Size(dims[dim0]) > Size(dims[dim1])) return 1;
    }
    return 0;
  };
  std::vector<size_t> perm(n);
  for (size_t i = 0; i < n; ++i) perm[i] = n - 1 - i;
  for (size_t i = 1; i < n; ++i) {
    size_t dim1 = i;
    for (size_t dim0 = i; dim0-- > 0;) {
      const int comparison = should_swap(perm[dim0], perm[dim1]);
      if (comparison > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (comparison < 0) {
        break;
      }
    }
  }
  Strides out(n, 1);
  int64_t stride = 1;
  for (size_t d : perm) {
    out[d] = stride;
    stride *= Size(dims[d]);
  }
  return out;
}

}  // namespace dplace::io
