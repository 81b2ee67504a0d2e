// Disjoint sets over 0..n-1 (path halving). The smaller root stays the root of a join, so the
// sets' representatives do not depend on the order of joins.
#pragma once

#include <cstdint>
#include <numeric>
#include <utility>
#include <vector>

namespace dplace {

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), 0); }

  int32_t Find(int32_t x) {
    while (parent_[static_cast<size_t>(x)] != x) {
      parent_[static_cast<size_t>(x)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
      x = parent_[static_cast<size_t>(x)];
    }
    return x;
  }

  // Joins the sets of `a` and `b`. Returns {root, absorbed root}, or {root, -1} when they were one.
  std::pair<int32_t, int32_t> Join(int32_t a, int32_t b) {
    a = Find(a);
    b = Find(b);
    if (a == b) return {a, -1};
    if (b < a) std::swap(a, b);
    parent_[static_cast<size_t>(b)] = a;
    return {a, b};
  }

 private:
  std::vector<int32_t> parent_;
};

}  // namespace dplace
