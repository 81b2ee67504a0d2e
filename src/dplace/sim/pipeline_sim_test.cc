// Pipeline schedules on a two-stage training split, worked out by hand.
#include "dplace/sim/pipeline_sim.h"

#include <gtest/gtest.h>

#include <map>

#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

// Stage d0: f0 (forward, 1 s) and b0 (backward, 2 s); stage d1: f1 (1 s), b1 (2 s).
// f0 -> f1 -> b1 -> b0, f0 -> b0. Every tensor holds 5 bytes and moves in 0 s.
Problem TwoStages(double scale = 1) {
  graph::GraphBuilder b("two_stages");
  auto op = [](const std::string& name, double s, graph::OpKind kind) {
    graph::Op o = testing::TimedOp(name, s);
    o.kind = kind;
    return o;
  };
  const auto f0 = b.AddOp(op("f0", scale, graph::OpKind::kForward), {{5, 0}});
  const auto f1 = b.AddOp(op("f1", scale, graph::OpKind::kForward), {{5, 0}});
  const auto b1 = b.AddOp(op("b1", 2 * scale, graph::OpKind::kBackward), {{5, 0}});
  const auto b0 = b.AddOp(op("b0", 2 * scale, graph::OpKind::kBackward), {{5, 0}});
  b.AddEdge(f0, 0, f1);
  b.AddEdge(f1, 0, b1);
  b.AddEdge(b1, 0, b0);
  b.AddEdge(f0, 0, b0);
  return testing::Make(b, testing::ThreeDevices());
}

TEST(PipelineSimTest, GPipe) {
  // d0: F0 [0,1] F1 [1,2]; d1: F0 [1,2] F1 [2,3] B1 [3,5] B0 [5,7]; d0: B1 [5,7] B0 [7,9].
  Problem p = TwoStages();
  auto r = SimulatePipeline(p, sim::OnDevices({0, 1, 1, 0}), PipelineSchedule::kGPipe, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->makespan_s, 9);
  EXPECT_DOUBLE_EQ(r->time_per_sample_s, 4.5);
  EXPECT_NEAR(r->bubble_fraction, 1.0 / 3, 1e-12);  // 1 - 12 / (2 * 9)
  ASSERT_EQ(r->stages.size(), 2u);
  EXPECT_EQ(r->stages[0].device, 0);
  EXPECT_EQ(r->stages[1].peak_in_flight, 2);
  EXPECT_DOUBLE_EQ(r->stages[1].peak_memory_bytes, 10);  // two micro-batches of f1's 5 bytes
  EXPECT_EQ(r->tasks.size(), 8u);
}

TEST(PipelineSimTest, OneForwardOneBackward) {
  // d0 runs F0 F1 B0 B1, d1 runs F0 B0 F1 B1: d1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7];
  // d0: F0 [0,1] F1 [1,2] B0 [4,6] B1 [7,9]. d1 never holds two micro-batches.
  Problem p = TwoStages();
  auto r = SimulatePipeline(p, sim::OnDevices({0, 1, 1, 0}), PipelineSchedule::k1F1B, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->makespan_s, 9);
  EXPECT_EQ(r->stages[1].peak_in_flight, 1);
  EXPECT_EQ(r->stages[0].peak_in_flight, 2);
  EXPECT_TRUE(r->feasible);
}

TEST(PipelineSimTest, OneForwardOneBackwardCountsWhatItsTraceShows) {
  // As above with 0.033-s forwards, 0.066-s backwards and 5 micro-batches. d1 runs F_m then B_m,
  // one micro-batch at a time; d0 holds at most 2 (1F1B's warm-up depth on the first of two
  // stages): each of its forwards after the warm-up starts at the very instant a backward ends,
  // which frees that micro-batch first. None of these instants is exact in binary: a forward's
  // start recomputed as its end less its duration fell before that backward's end and counted 3.
  Problem p = TwoStages(0.033);
  auto r = SimulatePipeline(p, sim::OnDevices({0, 1, 1, 0}), PipelineSchedule::k1F1B, 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stages[0].peak_in_flight, 2);
  EXPECT_EQ(r->stages[1].peak_in_flight, 1);
  EXPECT_DOUBLE_EQ(r->stages[0].peak_memory_bytes, 10);
  // The trace agrees: on d0, no forward starts before the backward two micro-batches back ends.
  std::map<std::pair<int, bool>, const PipelineTask*> d0;
  for (const PipelineTask& t : r->tasks) {
    if (t.device == 0) d0[{t.microbatch, t.backward}] = &t;
  }
  for (int m = 2; m < 5; ++m) {
    const PipelineTask* forward = d0[std::make_pair(m, false)];
    const PipelineTask* backward = d0[std::make_pair(m - 2, true)];
    EXPECT_GE(forward->start_s, backward->end_s);
  }
}

// a (1 s) -> c (3 s), 30-byte outputs, on two devices of `memory` bytes each.
Problem InferencePair(double memory) {
  graph::GraphBuilder b("inference");
  const auto a = b.AddOp(testing::TimedOp("a", 1), {{30, 0}});
  const auto c = b.AddOp(testing::TimedOp("c", 3), {{30, 0}});
  b.AddEdge(a, 0, c);
  return testing::Make(b, testing::ThreeDevices(memory));
}

TEST(PipelineSimTest, MemoryOverflowIsReported) {
  // Inference: d0 runs F0..F3 back to back; each holds 30 bytes only while it runs, so one is in
  // flight at a time: fits in 50 bytes, not in 25.
  Problem roomy = InferencePair(50);
  auto r = SimulatePipeline(roomy, sim::OnDevices({0, 1}), PipelineSchedule::kGPipe, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->makespan_s, 1 + 4 * 3);
  EXPECT_EQ(r->stages[0].peak_in_flight, 1);
  EXPECT_TRUE(r->feasible) << r->reason;
  Problem p = InferencePair(25);
  auto tight = SimulatePipeline(p, sim::OnDevices({0, 1}), PipelineSchedule::kGPipe, 4);
  ASSERT_TRUE(tight.ok());
  EXPECT_FALSE(tight->feasible);
  EXPECT_NE(tight->reason.find("1 micro-batches in flight exceeds capacity 25 B"),
            std::string::npos)
      << tight->reason;
  EXPECT_FALSE(SimulatePipeline(p, sim::OnDevices({0, 1}), PipelineSchedule::kGPipe, 0).ok());
}

}  // namespace
}  // namespace dplace::sim
