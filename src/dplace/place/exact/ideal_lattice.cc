#include "dplace/place/exact/ideal_lattice.h"

#include <algorithm>
#include <string>

namespace dplace::place {
namespace {

uint64_t Hash(const uint64_t* words, int n) {
  uint64_t h = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < n; ++i) {
    h ^= words[i] + 0x9E3779B97F4A7C15ull + (h << 6) + (h >> 2);
    h *= 0xBF58476D1CE4E5B9ull;
  }
  return h ^ (h >> 31);
}

// The size of an antichain found in linear time: units of equal longest-path depth from the
// sources are pairwise incomparable, and so are units of equal height above the sinks. Every subset
// of an antichain is the set of maximal units of its own ideal, so the DAG has at least 2^width.
int AntichainWidth(const std::vector<std::vector<int>>& preds) {
  const size_t n = preds.size();
  std::vector<int> depth(n, 0), height(n, 0);
  for (size_t v = 0; v < n; ++v) {
    for (int p : preds[v]) depth[v] = std::max(depth[v], depth[static_cast<size_t>(p)] + 1);
  }
  for (size_t v = n; v-- > 0;) {
    for (int p : preds[v]) {
      height[static_cast<size_t>(p)] = std::max(height[static_cast<size_t>(p)], height[v] + 1);
    }
  }
  std::vector<int> at_depth(n + 1, 0), at_height(n + 1, 0);
  int width = 0;
  for (size_t v = 0; v < n; ++v) {
    width = std::max({width, ++at_depth[static_cast<size_t>(depth[v])],
                      ++at_height[static_cast<size_t>(height[v])]});
  }
  return width;
}

}  // namespace

StatusOr<IdealLattice> IdealLattice::All(const std::vector<std::vector<int>>& preds, int64_t limit,
                                         std::chrono::steady_clock::time_point deadline) {
  auto too_many = [limit] {
    return InvalidInput("the graph has more than " + std::to_string(limit) +
                        " contiguous prefixes (ideals); the exact DP would not fit its time or "
                        "1 GiB memory budget");
  };
  // Refused at once when an antichain alone gives more ideals than the limit (training graphs'
  // weight gradients hang off the chain, each in or out of a prefix on its own).
  if (const int width = AntichainWidth(preds); width >= 62 || (int64_t{1} << width) > limit) {
    return too_many();
  }
  IdealLattice L;
  const int n = static_cast<int>(preds.size());
  L.words_ = n / 64 + 1;
  const auto w = static_cast<size_t>(L.words_);
  std::vector<int32_t> table(1024, -1);  // open addressing: ideal ids
  auto find_or_add = [&](const uint64_t* bits, bool* added) -> int {
    if ((L.bits_.size() / w + 2) * 2 > table.size()) {
      std::vector<int32_t> bigger(table.size() * 2, -1);
      const size_t stored = L.bits_.size() / w;
      for (size_t id = 0; id < stored; ++id) {
        size_t slot = Hash(L.bits_.data() + id * w, L.words_) & (bigger.size() - 1);
        while (bigger[slot] >= 0) slot = (slot + 1) & (bigger.size() - 1);
        bigger[slot] = static_cast<int32_t>(id);
      }
      table.swap(bigger);
    }
    size_t slot = Hash(bits, L.words_) & (table.size() - 1);
    while (table[slot] >= 0) {
      const uint64_t* other = L.bits_.data() + static_cast<size_t>(table[slot]) * w;
      if (std::equal(bits, bits + w, other)) {
        *added = false;
        return table[slot];
      }
      slot = (slot + 1) & (table.size() - 1);
    }
    const auto id = static_cast<int32_t>(L.bits_.size() / w);
    table[slot] = id;
    L.bits_.insert(L.bits_.end(), bits, bits + w);
    *added = true;
    return id;
  };
  std::vector<uint64_t> scratch(w, 0);
  bool added = false;
  find_or_add(scratch.data(), &added);
  L.next_offsets_.push_back(0);
  // Breadth-first: ideal `id` is expanded after every smaller one, so ids grow with size.
  for (size_t id = 0; id < L.bits_.size() / w; ++id) {
    if ((id & 0x3FF) == 0 && std::chrono::steady_clock::now() > deadline) {
      return InvalidInput("the time limit passed while enumerating the graph's " +
                          std::to_string(L.bits_.size() / w) + "+ contiguous prefixes (ideals)");
    }
    for (int v = 0; v < n; ++v) {
      const uint64_t* bits = L.bits_.data() + id * w;
      if ((bits[v / 64] >> (v % 64)) & 1u) continue;
      bool addable = true;
      for (int p : preds[static_cast<size_t>(v)]) {
        if (!((bits[p / 64] >> (p % 64)) & 1u)) {
          addable = false;
          break;
        }
      }
      if (!addable) continue;
      std::copy(bits, bits + w, scratch.begin());
      scratch[static_cast<size_t>(v / 64)] |= uint64_t{1} << (v % 64);
      const int next = find_or_add(scratch.data(), &added);
      if (static_cast<int64_t>(L.bits_.size() / w) > limit) return too_many();
      L.next_.emplace_back(v, next);
    }
    L.next_offsets_.push_back(static_cast<int64_t>(L.next_.size()));
  }
  L.full_ = L.size() - 1;  // the last one discovered is the only ideal of size n
  return L;
}

IdealLattice IdealLattice::Chain(int num_units) {
  IdealLattice L;
  L.chain_ = true;
  L.next_offsets_.push_back(0);
  for (int i = 0; i <= num_units; ++i) {
    if (i < num_units) L.next_.emplace_back(i, i + 1);
    L.next_offsets_.push_back(static_cast<int64_t>(L.next_.size()));
  }
  L.full_ = num_units;
  return L;
}

}  // namespace dplace::place
