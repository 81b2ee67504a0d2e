#include "dplace/sched/orders.h"

#include <gtest/gtest.h>

#include <string>

#include "dplace/sched/schedules.h"

namespace dplace::sched {
namespace {

// "F0 F1 B0 ..." (with the chunk, "F0.1", where there are several).
std::string Text(const std::vector<Task>& order, bool chunks = false) {
  std::string out;
  for (const Task& t : order) {
    out += (out.empty() ? "" : " ") + std::string(t.backward ? "B" : "F") +
           std::to_string(t.microbatch) + (chunks ? "." + std::to_string(t.chunk) : "");
  }
  return out;
}

TEST(OrdersTest, OneFOneBWarmsUpByTheStagesAfterAndGpipeRunsEveryForwardFirst) {
  // Rank 0 of 3 under 1F1B: two warm-up forwards.
  EXPECT_EQ(Text(WarmupOrder(2, 4)), "F0 F1 F2 B0 F3 B1 B2 B3");
  EXPECT_EQ(Text(WarmupOrder(0, 3)), "F0 B0 F1 B1 F2 B2");  // the last rank
  EXPECT_EQ(Text(WarmupOrder(3, 3)), "F0 F1 F2 B0 B1 B2");  // GPipe
  EXPECT_EQ(Text(WarmupOrder(9, 2)), "F0 F1 B0 B1");        // warm-up capped at the micro-batches
}

TEST(OrdersTest, InterleavedIsMegatronsOrder) {
  // 2 ranks, 2 chunks, 4 micro-batches: rank 0 warms up 2 (ranks - 1) + (chunks - 1) 2 = 4.
  EXPECT_EQ(Text(InterleavedOrder(0, 2, 2, 4), true),
            "F0.0 F1.0 F0.1 F1.1 F2.0 B0.1 F3.0 B1.1 F2.1 B0.0 F3.1 B1.0 B2.1 B3.1 B2.0 B3.0");
  EXPECT_EQ(Text(InterleavedOrder(1, 2, 2, 4), true),
            "F0.0 F1.0 F0.1 B0.1 F1.1 B1.1 F2.0 B0.0 F3.0 B1.0 F2.1 B2.1 F3.1 B3.1 B2.0 B3.0");
  // As many micro-batches as ranks: every forward first (Megatron-LM's all_warmup_microbatches).
  EXPECT_EQ(Text(InterleavedOrder(1, 2, 2, 2), true), "F0.0 F1.0 F0.1 F1.1 B0.1 B1.1 B0.0 B1.0");
}

}  // namespace
}  // namespace dplace::sched

namespace dplace::sched {
namespace {

TEST(ScheduleTableTest, EveryScheduleIsFoundByItsNameAndWarmsUpAsItsRowSays) {
  for (const ScheduleRow& row : Schedules()) {
    EXPECT_EQ(ScheduleNamed(row.name), row.schedule);
    EXPECT_EQ(&RowOf(row.schedule), &row);
    // Split backward, and only then, lets weight gradients wait.
    EXPECT_EQ(row.splits_backward, row.weights_waiting_per_stage_before > 0) << row.name;
  }
  EXPECT_EQ(WarmupForwards(RowOf(Schedule::k1F1B), 3, 8), 3);
  EXPECT_EQ(WarmupForwards(RowOf(Schedule::kZbH2), 3, 8), 6);
  EXPECT_EQ(WarmupForwards(RowOf(Schedule::kGPipe), 3, 8), 8);
  EXPECT_FALSE(ScheduleNamed("1F1B").has_value());
  EXPECT_EQ(ScheduleNames(), "gpipe, 1f1b, interleaved, zb-h1 or zb-h2");
}

}  // namespace
}  // namespace dplace::sched
