#include "dplace/cost/collectives.h"

#include <gtest/gtest.h>

namespace dplace::cost {
namespace {

hw::Machine TwoLevels(int gpus, int nodes) {
  hw::Machine m;
  m.name = "test";
  m.levels = {{.name = "nvlink", .size = gpus, .bandwidth_bytes_per_s = 100e9, .latency_s = 2e-6},
              {.name = "ib", .size = nodes, .bandwidth_bytes_per_s = 10e9, .latency_s = 5e-6}};
  return m;
}

TEST(CollectivesTest, ARingAllReduceIsTwoNMinusOneStepsOfAnNthOfTheBytes) {
  const hw::Link link{.bandwidth_bytes_per_s = 1e9, .latency_s = 1e-6};
  EXPECT_DOUBLE_EQ(RingAllReduceTime(4e9, 4, link), 6 * (1e-6 + 1.0));
  EXPECT_EQ(RingAllReduceTime(4e9, 1, link), 0);
}

TEST(CollectivesTest, OneLevelAllReduceIsReduceScatterPlusAllGather) {
  const hw::Machine m = TwoLevels(8, 1);
  const std::vector<int> span{8, 1};
  const double ar = CollectiveTime(Collective::kAllReduce, 1e9, span, m);
  EXPECT_DOUBLE_EQ(ar, 14 * (2e-6 + 1e9 / 8 / 100e9));
  EXPECT_DOUBLE_EQ(ar, CollectiveTime(Collective::kReduceScatter, 1e9, span, m) +
                           CollectiveTime(Collective::kAllGather, 1e9, span, m));
}

TEST(CollectivesTest, AGroupAcrossNodesRunsHierarchically) {
  const hw::Machine m = TwoLevels(8, 4);
  const std::vector<int> span{8, 4};
  // Reduce-scatter and all-gather inside the node, an all-reduce of an 8th across the 4 nodes
  // (tree: 2 log2 4 latencies, faster than the ring's 6).
  const double inside = 2 * 7 * (2e-6 + 1e9 / 8 / 100e9);
  const double across = 4 * 5e-6 + 6 * (1e9 / 8 / 4) / 10e9;
  EXPECT_NEAR(CollectiveTime(Collective::kAllReduce, 1e9, span, m), inside + across, 1e-12);
  // Far cheaper than a flat ring at the network's rate.
  EXPECT_LT(CollectiveTime(Collective::kAllReduce, 1e9, span, m),
            RingAllReduceTime(1e9, 32, {.bandwidth_bytes_per_s = 10e9, .latency_s = 5e-6}) / 4);
}

TEST(CollectivesTest, GroupSpanFollowsMegatronsRankOrder) {
  const hw::Machine m = TwoLevels(8, 4);
  EXPECT_EQ(hw::GroupSpan(m, 1, 8), (std::vector<int>{8, 1}));   // TP 8 in a node
  EXPECT_EQ(hw::GroupSpan(m, 8, 4), (std::vector<int>{1, 4}));   // DP over nodes after TP 8
  EXPECT_EQ(hw::GroupSpan(m, 2, 8), (std::vector<int>{4, 2}));   // DP 8 after TP 2
  EXPECT_EQ(hw::GroupSpan(m, 1, 16), (std::vector<int>{8, 2}));  // TP 16 across two nodes
  EXPECT_EQ(hw::GroupSpan(m, 1, 1), (std::vector<int>{1, 1}));
}

TEST(CollectivesTest, ASendInsideANodeUsesNvlink) {
  const hw::Machine m = TwoLevels(8, 2);
  EXPECT_DOUBLE_EQ(SendTime(1e9, 0, m), 2e-6 + 0.01);
  EXPECT_DOUBLE_EQ(SendTime(1e9, 1, m), 5e-6 + 0.1);
}

}  // namespace
}  // namespace dplace::cost
