#include "dplace/job/schedule.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>

namespace dplace::job {
namespace {

double Makespan(Schedule s, int ranks, int chunks, int m, Work w, double send = 0) {
  const auto actions = ScheduleActions(s, ranks, chunks, m);
  std::vector<Work> work(static_cast<size_t>(ranks * chunks), w);
  const auto ends = SimulateActions(actions, work, ranks, chunks, send);
  return *std::max_element(ends.begin(), ends.end());
}

TEST(ScheduleTest, EveryScheduleRunsEachForwardAndBackwardOnceOnItsRank) {
  for (const ScheduleRow& row : sched::Schedules()) {
    const int ranks = 4, chunks = row.interleaves ? 2 : 1, m = 8;
    const auto actions = ScheduleActions(row.schedule, ranks, chunks, m);
    ASSERT_EQ(actions.size(), 4u);
    for (const auto& rank : actions) {
      std::set<std::tuple<int, int, int>> seen;
      for (const Action& a : rank) {
        EXPECT_TRUE(seen.insert({static_cast<int>(a.kind), a.microbatch, a.chunk}).second);
      }
      EXPECT_EQ(rank.size(), static_cast<size_t>(m * chunks * (row.splits_backward ? 3 : 2)))
          << row.name;
    }
  }
}

TEST(ScheduleTest, OneFOneBOfEvenStagesTakesMPlusPMinusOneRounds) {
  // Uniform stages, no sends: (M + p - 1)(F + B), the bubble (p - 1)(F + B).
  EXPECT_DOUBLE_EQ(Makespan(Schedule::k1F1B, 4, 1, 8, {1, 2, 0}), (8 + 3) * 3.0);
  EXPECT_DOUBLE_EQ(Makespan(Schedule::kGPipe, 4, 1, 8, {1, 2, 0}), (8 + 3) * 3.0);
  EXPECT_DOUBLE_EQ(Makespan(Schedule::k1F1B, 1, 1, 5, {1, 2, 0}), 15.0);
  // Each send on the path adds to the first forward's and last backward's way.
  EXPECT_DOUBLE_EQ(Makespan(Schedule::k1F1B, 2, 1, 1, {1, 2, 0}, 0.5), 1 + 0.5 + 3 + 0.5 + 2);
}

TEST(ScheduleTest, InterleavingDividesTheBubbleByTheChunks) {
  // v chunks of a v-th of the work each: M v (f + b) + (p - 1)(f + b), f + b = 3 / v.
  const double v = 2;
  EXPECT_DOUBLE_EQ(Makespan(Schedule::kInterleaved, 4, 2, 8, {0.5, 1.0, 0}), 8 * v * 1.5 + 3 * 1.5);
}

TEST(ScheduleTest, ZeroBubbleH1FillsTheCoolDownWithWeightGradients) {
  const double one_f_one_b = Makespan(Schedule::k1F1B, 4, 1, 8, {1, 2, 0});
  const double zb = Makespan(Schedule::kZbH1, 4, 1, 8, {1, 1, 1});
  EXPECT_LT(zb, one_f_one_b);
  EXPECT_GE(zb, 8 * 3.0);  // never below the work of one rank
  // The paper's bubble for F = B = W: (p - 1)(F + B - W).
  EXPECT_DOUBLE_EQ(zb, 8 * 3.0 + 3 * 1.0);
}

TEST(ScheduleTest, ZeroBubbleH2BeatsH1WhereInputGradientsCostMoreThanWeightGradients) {
  // One synchronised step (as torch.distributed.pipelining runs it): H2's longer warm-up fills the
  // first rank, and the last idles for it, so it wins only where I > W.
  const Work heavy_input{1, 1.5, 0.5}, even{1, 1, 1};
  EXPECT_LT(Makespan(Schedule::kZbH2, 4, 1, 8, heavy_input),
            Makespan(Schedule::kZbH1, 4, 1, 8, heavy_input));
  EXPECT_GE(Makespan(Schedule::kZbH2, 4, 1, 8, even), Makespan(Schedule::kZbH1, 4, 1, 8, even));
  EXPECT_GE(Makespan(Schedule::kZbH2, 4, 1, 8, even), 8 * 3.0);  // the work of one rank
  // Twice 1F1B's warm-up: rank r holds 2(p - 1 - r) + 1 micro-batches from F to W, at least.
  const auto held = HeldMicrobatches(ScheduleActions(Schedule::kZbH2, 4, 1, 8), true);
  for (int r = 0; r < 4; ++r) EXPECT_GE(held[static_cast<size_t>(r)], 2 * (3 - r) + 1) << r;
}

TEST(ScheduleTest, HeldMicrobatchesAreWhatMegatronCountsInFlight) {
  const auto one = HeldMicrobatches(ScheduleActions(Schedule::k1F1B, 4, 1, 8), false);
  EXPECT_EQ(one, (std::vector<int>{4, 3, 2, 1}));
  EXPECT_EQ(HeldMicrobatches(ScheduleActions(Schedule::kGPipe, 4, 1, 8), false),
            (std::vector<int>{8, 8, 8, 8}));
  // Interleaved, rank 0: 2(p - 1) + (v - 1)p + 1 chunk-micro-batches (Megatron-LM's warm-up + 1).
  const auto inter = HeldMicrobatches(ScheduleActions(Schedule::kInterleaved, 4, 2, 8), false);
  EXPECT_EQ(inter.front(), 2 * 3 + 4 + 1);
  // ZB-H1 (Qi et al. 2024): 1F1B's peak on every rank, however many micro-batches: a rank defers
  // only as many weight gradients as it holds fewer forwards than the first; ZB-H2 holds more.
  EXPECT_EQ(HeldMicrobatches(ScheduleActions(Schedule::kZbH1, 4, 1, 64), true),
            (std::vector<int>{4, 4, 4, 4}));
  EXPECT_EQ(HeldMicrobatches(ScheduleActions(Schedule::kZbH2, 4, 1, 64), true),
            (std::vector<int>{7, 7, 7, 7}));
  // Fewer micro-batches than stages: at most all of them.
  EXPECT_EQ(HeldMicrobatches(ScheduleActions(Schedule::k1F1B, 4, 1, 2), false).front(), 2);
}

TEST(ScheduleTest, SchedulesAreFoundByName) {
  EXPECT_EQ(ScheduleNamed("zb-h1"), Schedule::kZbH1);
  EXPECT_EQ(ScheduleNamed("zb-h2"), Schedule::kZbH2);
  EXPECT_EQ(ScheduleNamed("interleaved"), Schedule::kInterleaved);
  EXPECT_FALSE(ScheduleNamed("1F1B").has_value());
  EXPECT_EQ(RowOf(Schedule::kGPipe).name, "gpipe");
}

}  // namespace
}  // namespace dplace::job
