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

}  // namespace dplace::io
