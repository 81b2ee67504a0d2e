#include "dplace/base/spelling.h"

#include <gtest/gtest.h>

namespace dplace {
namespace {

TEST(SpellingTest, SuggestsCloseNamesOnly) {
  const std::vector<std::string> keys = {"peak_flops", "peak_flops_half", "memory", "kind"};
  EXPECT_EQ(DidYouMean("peak_flop", keys), " (did you mean 'peak_flops'?)");
  EXPECT_EQ(Closest("Memroy", keys), "memory");  // a swap is two edits; case is ignored
  EXPECT_EQ(Closest("bandwidth", keys), "");
  EXPECT_EQ(DidYouMean("xyz", keys), "");
}

}  // namespace
}  // namespace dplace
