// Placeto's message passing over a DAG, forward and backward by hand: one pass visits the nodes in
// topological order (or its reverse) and gives each node
//   s_v = Σ_{u ∈ in(v)} m_u,   a_v = relu(W1 s_v + b1),   m_v = tanh(h_v + W2 a_v + b2),
// where in(v) are v's predecessors (forward pass) or successors (backward pass). A node's message
// thus carries what every node before it sent, as in Placeto. Plain loops over the nodes: the
// passes are sequential along the DAG and the layers are narrow, so this is far faster than one
// tensor operation per node. The policy (policy.cc) wraps Forward/Backward in an autograd
// function; message_passing_test.cc checks the gradients against finite differences.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace dplace::learn {

// One pass's edges: node v's inputs are edges[offsets[v] .. offsets[v + 1]), every one of them
// visited before v when the nodes go in `order`.
struct PassEdges {
  const std::vector<int32_t>* offsets;
  const std::vector<int32_t>* edges;
  bool reverse;  // visit nodes n-1 .. 0 instead of 0 .. n-1
};

// Weights of one pass, row-major: w1 and w2 are width × width.
template <typename T>
struct PassWeights {
  const T* w1;
  const T* b1;
  const T* w2;
  const T* b2;
  int width;
};

// What Forward keeps for Backward, n × width each: per node s_v and the pre-activation of a_v.
template <typename T>
struct PassTape {
  T* s;
  T* pre;
};

namespace detail {
template <typename T>
void MatVec(const T* w, const T* x, int width, T* y) {  // y += W x
  for (int i = 0; i < width; ++i) {
    T acc = 0;
    const T* row = w + static_cast<std::ptrdiff_t>(i) * width;
    for (int j = 0; j < width; ++j) acc += row[j] * x[j];
    y[i] += acc;
  }
}
template <typename T>
void MatTVec(const T* w, const T* x, int width, T* y) {  // y += Wᵀ x
  for (int i = 0; i < width; ++i) {
    const T xi = x[i];
    if (xi == 0) continue;
    const T* row = w + static_cast<std::ptrdiff_t>(i) * width;
    for (int j = 0; j < width; ++j) y[j] += row[j] * xi;
  }
}
template <typename T>
void Outer(const T* a, const T* b, int width, T* out) {  // out += a bᵀ
  for (int i = 0; i < width; ++i) {
    if (a[i] == 0) continue;
    T* row = out + static_cast<std::ptrdiff_t>(i) * width;
    for (int j = 0; j < width; ++j) row[j] += a[i] * b[j];
  }
}
}  // namespace detail

// m (n × width) from h (n × width); fills the tape.
template <typename T>
void PassForward(const PassEdges& e, int n, const T* h, const PassWeights<T>& w, T* m,
                 const PassTape<T>& tape) {
  const int k = w.width;
  const auto size = static_cast<std::ptrdiff_t>(n) * k;
  std::fill(tape.s, tape.s + size, T(0));
  std::vector<T> a(static_cast<size_t>(k));
  for (int step = 0; step < n; ++step) {
    const int v = e.reverse ? n - 1 - step : step;
    const auto row = static_cast<std::ptrdiff_t>(v) * k;
    T* s = tape.s + row;
    const auto vi = static_cast<size_t>(v);
    for (int32_t i = (*e.offsets)[vi]; i < (*e.offsets)[vi + 1]; ++i) {
      const T* mu = m + static_cast<std::ptrdiff_t>((*e.edges)[static_cast<size_t>(i)]) * k;
      for (int j = 0; j < k; ++j) s[j] += mu[j];
    }
    T* pre = tape.pre + row;
    std::copy(w.b1, w.b1 + k, pre);
    detail::MatVec(w.w1, s, k, pre);
    for (int j = 0; j < k; ++j) a[static_cast<size_t>(j)] = std::max(pre[j], T(0));
    T* mv = m + row;
    for (int j = 0; j < k; ++j) mv[j] = h[row + j] + w.b2[j];
    detail::MatVec(w.w2, a.data(), k, mv);
    for (int j = 0; j < k; ++j) mv[j] = std::tanh(mv[j]);
  }
}

// Gradients of one pass: given dL/dm (n × width, consumed), adds dL/dh and the weights' gradients.
template <typename T>
struct PassGrads {
  T* h;
  T* w1;
  T* b1;
  T* w2;
  T* b2;
};

template <typename T>
void PassBackward(const PassEdges& e, int n, const T* m, const PassWeights<T>& w,
                  const PassTape<T>& tape, T* grad_m, const PassGrads<T>& g) {
  const int k = w.width;
  std::vector<T> dz(static_cast<size_t>(k)), a(static_cast<size_t>(k)),
      dpre(static_cast<size_t>(k)), ds(static_cast<size_t>(k));
  for (int step = n - 1; step >= 0; --step) {
    const int v = e.reverse ? n - 1 - step : step;
    const auto row = static_cast<std::ptrdiff_t>(v) * k;
    const T* mv = m + row;
    const T* gm = grad_m + row;
    const T* pre = tape.pre + row;
    for (int j = 0; j < k; ++j) {
      dz[static_cast<size_t>(j)] = gm[j] * (1 - mv[j] * mv[j]);
      a[static_cast<size_t>(j)] = std::max(pre[j], T(0));
      g.h[row + j] += dz[static_cast<size_t>(j)];
      g.b2[j] += dz[static_cast<size_t>(j)];
    }
    detail::Outer(dz.data(), a.data(), k, g.w2);
    std::fill(dpre.begin(), dpre.end(), T(0));
    detail::MatTVec(w.w2, dz.data(), k, dpre.data());
    for (int j = 0; j < k; ++j) {
      if (pre[j] <= 0) dpre[static_cast<size_t>(j)] = 0;
      g.b1[j] += dpre[static_cast<size_t>(j)];
    }
    detail::Outer(dpre.data(), tape.s + row, k, g.w1);
    std::fill(ds.begin(), ds.end(), T(0));
    detail::MatTVec(w.w1, dpre.data(), k, ds.data());
    const auto vi = static_cast<size_t>(v);
    for (int32_t i = (*e.offsets)[vi]; i < (*e.offsets)[vi + 1]; ++i) {
      T* gu = grad_m + static_cast<std::ptrdiff_t>((*e.edges)[static_cast<size_t>(i)]) * k;
      for (int j = 0; j < k; ++j) gu[j] += ds[static_cast<size_t>(j)];
    }
  }
}

}  // namespace dplace::learn
