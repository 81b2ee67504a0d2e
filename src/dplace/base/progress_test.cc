#include "dplace/base/progress.h"

#include <gtest/gtest.h>

#include <sstream>

namespace dplace {
namespace {

TEST(ProgressTest, QuietWhenNotATerminal) {
  std::ostringstream out;
  {
    Progress p(3, out, /*interactive=*/false, /*delay_s=*/0);
    p.Advance("a");
    p.Advance("b");
  }
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressTest, QuietForTheFirstSecond) {
  std::ostringstream out;
  {
    Progress p(3, out, /*interactive=*/true, /*delay_s=*/3600);
    p.Advance("a");
  }
  EXPECT_EQ(out.str(), "");
}

TEST(ProgressTest, BarCountsAndClearsItsLine) {
  std::ostringstream out;
  {
    Progress p(4, out, /*interactive=*/true, /*delay_s=*/0);
    p.Advance("first");
    p.Advance("second");
    EXPECT_NE(out.str().find("[###############...............] 2/4"), std::string::npos)
        << out.str();
    EXPECT_NE(out.str().find("second"), std::string::npos);
  }
  EXPECT_TRUE(out.str().ends_with("\r\033[K")) << out.str();
}

}  // namespace
}  // namespace dplace
