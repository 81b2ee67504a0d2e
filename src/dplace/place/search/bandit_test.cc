#include "dplace/place/search/bandit.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace dplace::place {
namespace {

TEST(BanditTest, StartsAtItsPriorAndMovesTowardsTheArmThatGains) {
  Bandit bandit({1, 1, 2}, /*floor=*/0.3, /*rate=*/0.05);
  EXPECT_DOUBLE_EQ(bandit.probabilities()[2], 0.5);
  Rng rng(7);
  int picked_first = 0;
  for (int i = 0; i < 2000; ++i) {
    const int arm = bandit.Pick(rng);
    picked_first += arm == 0;
    bandit.Reward(arm, arm == 0 ? 0.01 : 0.0);  // only arm 0 ever gains
  }
  const std::vector<double>& p = bandit.probabilities();
  EXPECT_GT(p[0], 0.6);
  // The floor keeps the prior's share of every arm: 0.3 × 0.25 and 0.3 × 0.5.
  EXPECT_GE(p[1], 0.3 * 0.25 - 1e-12);
  EXPECT_GE(p[2], 0.3 * 0.5 - 1e-12);
  EXPECT_NEAR(p[0] + p[1] + p[2], 1, 1e-12);
  EXPECT_GT(picked_first, 2000 / 4);
  EXPECT_EQ(bandit.pulls(), 2000);
}

TEST(BanditTest, NoGainLeavesItAtItsPrior) {
  Bandit bandit({3, 1});
  Rng rng(1);
  for (int i = 0; i < 100; ++i) bandit.Reward(bandit.Pick(rng), 0);
  EXPECT_DOUBLE_EQ(bandit.probabilities()[0], 0.75);
}

TEST(BanditTest, TheSameDrawsGiveTheSameChoices) {
  auto run = [] {
    Bandit bandit({1, 1, 1});
    Rng rng(5);
    std::vector<int> arms;
    for (int i = 0; i < 500; ++i) {
      arms.push_back(bandit.Pick(rng));
      bandit.Reward(arms.back(), arms.back() == 1 ? rng.Uniform() : 0);
    }
    return arms;
  };
  EXPECT_EQ(run(), run());
}

TEST(BanditTest, WithoutAFloorItStaysFinite) {
  Bandit bandit({1, 1}, /*floor=*/0, /*rate=*/10);
  Rng rng(2);
  for (int i = 0; i < 1000; ++i) {
    const int arm = bandit.Pick(rng);
    bandit.Reward(arm, arm == 0 ? 1.0 : 1e-9);
  }
  // (Without a floor it may settle on either arm: nothing makes it look again.)
  const std::vector<double>& p = bandit.probabilities();
  EXPECT_TRUE(std::isfinite(p[0]) && std::isfinite(p[1]));
  EXPECT_NEAR(p[0] + p[1], 1, 1e-9);
  EXPECT_GE(bandit.Pick(rng), 0);
}

}  // namespace
}  // namespace dplace::place
