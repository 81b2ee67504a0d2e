// The ideals (downward-closed unit sets) of a DAG, as a lattice the exact DP walks: every ideal has
// an id (ids in order of discovery by breadth-first search, so by size), its bitset, and the list
// of units that can be added to it with the id of the ideal that results. Also the chain lattice of
// a topological order (its prefixes), on which the same DP is PipeDream's linear DP.
#pragma once

#include <chrono>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "dplace/base/status.h"

namespace dplace::place {

class IdealLattice {
 public:
  // All ideals of the DAG given by `preds` (units numbered topologically). InvalidInput when there
  // are more than `limit` of them (the DP would not fit in time or memory), or when `deadline`
  // passes before they are all found.
  static StatusOr<IdealLattice> All(const std::vector<std::vector<int>>& preds, int64_t limit,
                                    std::chrono::steady_clock::time_point deadline =
                                        std::chrono::steady_clock::time_point::max());
  // The prefixes {0..i-1} of the topological numbering, i = 0..n.
  static IdealLattice Chain(int num_units);

  int size() const { return static_cast<int>(next_offsets_.size()) - 1; }
  bool Contains(int id, int unit) const {
    if (chain_) return unit < id;  // the chain's ideal i is {0..i-1}: no bits stored
    const uint64_t* bits = bits_.data() + static_cast<size_t>(id) * static_cast<size_t>(words_);
    return (bits[unit / 64] >> (unit % 64)) & 1u;
  }
  // (unit, id of ideal + unit) for every unit that can be added to ideal `id`, ascending by unit.
  std::span<const std::pair<int, int>> Next(int id) const {
    return {next_.data() + next_offsets_[static_cast<size_t>(id)],
            static_cast<size_t>(next_offsets_[static_cast<size_t>(id) + 1] -
                                next_offsets_[static_cast<size_t>(id)])};
  }
  int empty_id() const { return 0; }
  int full_id() const { return full_; }

 private:
  int words_ = 1;
  int full_ = 0;
  bool chain_ = false;
  std::vector<uint64_t> bits_;
  std::vector<std::pair<int, int>> next_;
  std::vector<int64_t> next_offsets_;
};

}  // namespace dplace::place
