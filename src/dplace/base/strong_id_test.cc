#include "dplace/base/strong_id.h"

#include <gtest/gtest.h>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dplace {
namespace {

using AId = Id<struct ATag>;
using BId = Id<struct BTag>;

// What an id may not do: become an integer or another id implicitly, index a plain vector,
// compare with another id type or with an integer of another width.
static_assert(!std::is_convertible_v<AId, int32_t>);
static_assert(!std::is_convertible_v<int32_t, AId>);
static_assert(!std::is_convertible_v<AId, BId>);
static_assert(!std::equality_comparable_with<AId, BId>);
static_assert(!std::equality_comparable_with<AId, size_t>);
static_assert(!std::totally_ordered_with<AId, size_t>);
template <typename Index>
concept IndexesPlainVector = requires(std::vector<double> v, Index i) {
  v[i];
};
static_assert(!IndexesPlainVector<AId>);
template <typename Index>
concept IndexesAVector = requires(IdVector<AId, double> v, Index i) {
  v[i];
};
static_assert(IndexesAVector<AId>);
static_assert(!IndexesAVector<BId>);
static_assert(!IndexesAVector<int32_t>);

TEST(StrongIdTest, ComparesWithItsOwnIntegerAndMovesByACount) {
  const AId a(3);
  EXPECT_TRUE(a == 3);
  EXPECT_TRUE(a >= 0);
  EXPECT_TRUE(AId(-1) < 0);
  EXPECT_EQ(a + 2, AId(5));
  EXPECT_EQ(a - 1, AId(2));
  EXPECT_EQ(a.index(), 3u);
}

TEST(StrongIdTest, IdVectorCountsAndIndexesByItsId) {
  IdVector<AId, double> v;
  EXPECT_EQ(v.next_id(), AId(0));
  v.push_back(1.5);
  v.push_back(2.5);
  double sum = 0;
  int count = 0;
  for (AId id : v.ids()) {
    sum += v[id];
    ++count;
  }
  EXPECT_EQ(count, 2);
  EXPECT_DOUBLE_EQ(sum, 4);
  EXPECT_EQ(v.next_id(), AId(2));
  EXPECT_EQ(IdRange<AId>(AId(3), AId(1)).size(), 0u);  // an empty range, not a negative one
}

}  // namespace
}  // namespace dplace
