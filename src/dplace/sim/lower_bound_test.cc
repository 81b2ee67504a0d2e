// Lower bounds: a join and a fork worked out by hand, and exhaustive checks that no placement of
// small random graphs beats the step bound.
#include "dplace/sim/lower_bound.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "dplace/base/rng.h"
#include "dplace/sim/step_sim.h"
#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

using testing::Make;
using testing::ThreeDevices;
using testing::TimedOp;

// a (1 s) feeds b and c (2 s each), which feed d (1 s) with tensors of `bytes` (as many seconds
// across devices).
Problem Diamond(double bytes) {
  graph::GraphBuilder builder("diamond");
  const auto a = builder.AddOp(TimedOp("a", 1), {{0, -1}});
  const auto b = builder.AddOp(TimedOp("b", 2), {{bytes, -1}});
  const auto c = builder.AddOp(TimedOp("c", 2), {{bytes, -1}});
  const auto d = builder.AddOp(TimedOp("d", 1));
  builder.AddEdge(a, 0, b);
  builder.AddEdge(a, 0, c);
  builder.AddEdge(b, 0, d);
  builder.AddEdge(c, 0, d);
  return Make(builder, ThreeDevices());
}

TEST(LowerBoundTest, JoinPaysForSerialisingOrForTransfers) {
  // 10-s tensors: the plain critical path is 1 + 2 + 1 = 4, but d either waits 10 s for a transfer
  // or has b and c run one after the other on its device: 1 + 2 + 2 + 1 = 6, which is also what
  // everything on one device takes.
  const Problem p = Diamond(10);
  EXPECT_DOUBLE_EQ(p.lower_bound, 6);
  EXPECT_DOUBLE_EQ(SimulateStep(p, sim::OnDevices({0, 0, 0, 0})).evaluation.value, 6);
  // With 0.5-s tensors the split pays off: the bound is the critical path plus one transfer, and
  // c on d1 reaches it.
  const Problem q = Diamond(0.5);
  EXPECT_DOUBLE_EQ(q.lower_bound, 1 + 2 + 0.5 + 1);
  EXPECT_DOUBLE_EQ(SimulateStep(q, sim::OnDevices({0, 0, 1, 0})).evaluation.value, 4.5);
}

TEST(LowerBoundTest, ForkPaysForSerialisingOrForTransfers) {
  // a (1 s) feeds b and c (2 s each) a tensor of `bytes`: the plain critical path is 3, but b and c
  // either run one after the other on a's device (5) or one waits for the tensor to cross.
  auto fork = [](double bytes) {
    graph::GraphBuilder builder("fork");
    const auto a = builder.AddOp(TimedOp("a", 1), {{bytes, -1}});
    const auto b = builder.AddOp(TimedOp("b", 2));
    const auto c = builder.AddOp(TimedOp("c", 2));
    builder.AddEdge(a, 0, b);
    builder.AddEdge(a, 0, c);
    return Make(builder, ThreeDevices());
  };
  const Problem p = fork(10);
  EXPECT_DOUBLE_EQ(p.lower_bound, 5);
  EXPECT_DOUBLE_EQ(SimulateStep(p, sim::OnDevices({0, 0, 0})).evaluation.value, 5);
  // A 0.5-s tensor: c on another device ends at 1 + 0.5 + 2, which the bound reaches.
  const Problem q = fork(0.5);
  EXPECT_DOUBLE_EQ(q.lower_bound, 3.5);
  EXPECT_DOUBLE_EQ(SimulateStep(q, sim::OnDevices({0, 0, 1})).evaluation.value, 3.5);
}

TEST(LowerBoundTest, ABranchOnTheJoinsDeviceBringsItsWholeChain) {
  // a feeds two chains b1 -> b2 and c1 -> c2 that join at d, all 1 s, with 10-s tensors. Charging
  // only the join's producers gives 5 s (b2 and c2 one after the other on d's device, from 2 s),
  // but a branch whose last op runs on d's device either brings its whole chain there or waits
  // 10 s for a crossing inside it: b1, b2, c1, c2 in turn from 1 s, then d: 6 s, which one device
  // takes.
  graph::GraphBuilder builder("branches");
  const auto a = builder.AddOp(TimedOp("a", 1), {{10, -1}});
  graph::OpId last[2];
  for (int branch = 0; branch < 2; ++branch) {
    const std::string name = branch == 0 ? "b" : "c";
    const auto first = builder.AddOp(TimedOp(name + "1", 1), {{10, -1}});
    last[branch] = builder.AddOp(TimedOp(name + "2", 1), {{10, -1}});
    builder.AddEdge(a, 0, first);
    builder.AddEdge(first, 0, last[branch]);
  }
  const auto d = builder.AddOp(TimedOp("d", 1));
  builder.AddEdge(last[0], 0, d);
  builder.AddEdge(last[1], 0, d);
  const Problem p = Make(builder, ThreeDevices());
  EXPECT_DOUBLE_EQ(p.lower_bound, 6);
  EXPECT_DOUBLE_EQ(SimulateStep(p, sim::OnDevices({0, 0, 0, 0, 0, 0})).evaluation.value, 6);
}

TEST(LowerBoundTest, ABranchSentAwayCrossesOutAndBack) {
  // a (1 s) feeds b and c (2 s each) 1-s tensors and d (1 s) a 10-s one; b and c feed d 1-s
  // tensors. Charging one crossing per sent branch gives 5 s (c sent, arriving at 1 + 2 + 1 = 4,
  // while a and b run on d's device), but a on another device than d costs its 10-s tensor, and
  // a on d's device makes a c sent elsewhere cross twice (arriving at 1 + 1 + 2 + 1 = 5): 6 s, what
  // one device takes.
  graph::GraphBuilder builder("skip");
  const auto a = builder.AddOp(TimedOp("a", 1), {{1, -1}, {10, -1}});
  const auto b = builder.AddOp(TimedOp("b", 2), {{1, -1}});
  const auto c = builder.AddOp(TimedOp("c", 2), {{1, -1}});
  const auto d = builder.AddOp(TimedOp("d", 1));
  builder.AddEdge(a, 0, b);
  builder.AddEdge(a, 0, c);
  builder.AddEdge(a, 1, d);
  builder.AddEdge(b, 0, d);
  builder.AddEdge(c, 0, d);
  const Problem p = Make(builder, ThreeDevices());
  EXPECT_DOUBLE_EQ(p.lower_bound, 6);
  EXPECT_DOUBLE_EQ(SimulateStep(p, sim::OnDevices({0, 0, 0, 0})).evaluation.value, 6);
  EXPECT_DOUBLE_EQ(SimulateStep(p, sim::OnDevices({0, 0, 1, 0})).evaluation.value, 6);
}

TEST(LowerBoundTest, TensorReadTwiceCrossesOnce) {
  // x and y (4 s each) feed z (1 s), which reads each 1-byte output twice. x on d1 and y, z on d0:
  // x's output crosses once, [4, 5], and z runs [5, 6]; the bound must not charge two crossings.
  graph::GraphBuilder builder("twice");
  const auto x = builder.AddOp(TimedOp("x", 4), {{1, -1}});
  const auto y = builder.AddOp(TimedOp("y", 4), {{1, -1}});
  const auto z = builder.AddOp(TimedOp("z", 1));
  for (auto producer : {x, x, y, y}) builder.AddEdge(producer, 0, z);
  const Problem p = Make(builder, ThreeDevices());
  EXPECT_DOUBLE_EQ(SimulateStep(p, sim::OnDevices({1, 0, 0})).evaluation.value, 6);
  EXPECT_DOUBLE_EQ(p.lower_bound, 6);
}

TEST(LowerBoundTest, WorkBoundCountsASlowDeviceAsAFraction) {
  // Four independent ops of 3 s on a GPU and 9 s on the CPU: with loads T, the GPUs do T / 3 ops
  // each and the CPU T / 9, so 2T / 3 + T / 9 = 4 ops and T = 36 / 7 s (the best placement, two
  // ops per GPU, takes 6 s). Equal weights would give 12 s / 3 devices = 4 s.
  for (Objective objective : {Objective::kStep, Objective::kThroughput}) {
    graph::GraphBuilder builder("four");
    for (int i = 0; i < 4; ++i) builder.AddOp(TimedOp("op" + std::to_string(i), 3, 9));
    Problem p = Make(builder, ThreeDevices(), objective);
    const double bound =
        objective == Objective::kStep ? StepLowerBound(p) : ThroughputLowerBound(p);
    EXPECT_LE(bound, 36.0 / 7 * (1 + 1e-12));
    EXPECT_GT(bound, 36.0 / 7 * 0.99);
  }
}

TEST(LowerBoundTest, WorkForcedIntoAWindowRaisesTheBoundAbovePathAndWork) {
  // s (1 s) forks to b1, b2, b3 (1 s each, 10 s on the CPU), which join at j (1 s); tensors cost
  // nothing. The path is 3 s and the weighted work 50 / 21 s, but the three b's must all run in
  // [1, T - 1] and two GPUs (the CPU cannot run one in time) fit at most 2 (T - 2) of them there:
  // with the work bound's weights (10 / 21 a GPU) T >= 2 + 3 * 10 / 21. The best placement takes
  // 4 s (the b's in two rounds).
  graph::GraphBuilder builder("fork3");
  const auto s = builder.AddOp(TimedOp("s", 1), {{0, -1}});
  const auto j = builder.AddOp(TimedOp("j", 1));
  for (int i = 0; i < 3; ++i) {
    const auto b = builder.AddOp(TimedOp("b" + std::to_string(i), 1), {{0, -1}});
    builder.AddEdge(s, 0, b);
    builder.AddEdge(b, 0, j);
  }
  const Problem p = Make(builder, ThreeDevices());
  const StepBoundParts parts = StepLowerBoundParts(p);
  EXPECT_DOUBLE_EQ(parts.path, 3);
  EXPECT_NEAR(parts.work, 50.0 / 21, 1e-6);
  EXPECT_NEAR(parts.energy, 2 + 30.0 / 21, 1e-3);
  EXPECT_DOUBLE_EQ(p.lower_bound, parts.value());
  EXPECT_DOUBLE_EQ(SimulateStep(p, sim::OnDevices({0, 0, 0, 1, 0})).evaluation.value, 4);
}

// Random graphs of `ops` ops (1 to 3 s) with tensors of 0 to 5 s across devices, each op feeding
// the next with probability `next` and any later one with probability `any`, some tensors read
// twice by one op, and, in every other graph, a co-location group; every placement on d0, d1 and
// c0 is simulated. Returns how many graphs some placement reaches the bound on (so that it is not
// trivially low).
int CheckRandomGraphs(uint64_t seed, int ops, double next, double any) {
  Rng rng(seed);
  const double sizes[] = {0, 0.5, 2, 5};
  int tight = 0;
  for (int trial = 0; trial < 60; ++trial) {
    graph::GraphBuilder builder("random");
    for (int i = 0; i < ops; ++i) {
      graph::Op op = TimedOp("op" + std::to_string(i), 1 + static_cast<double>(rng.Below(3)));
      if (trial % 2 == 1 && (i == 1 || i == 4)) op.colocation = builder.Group("g");
      builder.AddOp(std::move(op), {{sizes[rng.Below(4)], -1}});
    }
    for (int i = 0; i < ops; ++i) {
      for (int j = i + 1; j < ops; ++j) {
        if (rng.Uniform() < (j == i + 1 ? next : any))
          builder.AddEdge(graph::OpId(i), 0, graph::OpId(j));
        if (rng.Uniform() < 0.1)
          builder.AddEdge(graph::OpId(i), 0, graph::OpId(j));  // read twice, sent once
      }
    }
    Problem p = Make(builder, ThreeDevices());
    StepSimulator sim(p);
    double best = std::numeric_limits<double>::infinity();
    Placement placement(static_cast<size_t>(ops), sim::DeviceId(0));
    int placements = 1;
    for (int i = 0; i < ops; ++i) placements *= 3;
    for (int code = 0; code < placements; ++code) {
      for (int i = 0, rest = code; i < ops; ++i, rest /= 3)
        placement[OpId(i)] = sim::DeviceId(rest % 3);
      if (placement[OpId(1)] != placement[OpId(4)] && trial % 2 == 1) continue;  // co-location
      best = std::min(best, sim.Makespan(placement));
    }
    EXPECT_GE(best, p.lower_bound * (1 - 1e-12)) << "seed " << seed << " trial " << trial;
    if (best <= p.lower_bound * (1 + 1e-12)) ++tight;
  }
  return tight;
}

TEST(LowerBoundTest, NoPlacementOfSmallRandomGraphsBeatsTheStepBound) {
  EXPECT_GT(CheckRandomGraphs(5, 7, 0.4, 0.4), 0);
}

TEST(LowerBoundTest, NoPlacementOfSmallRandomBranchesBeatsTheStepBound) {
  // Mostly chains, with a few forks and joins between them: the segments of the join rule.
  EXPECT_GT(CheckRandomGraphs(11, 8, 0.7, 0.15), 0);
}

}  // namespace
}  // namespace dplace::sim
