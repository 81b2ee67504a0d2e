#include "dplace/sim/latency.h"

#include <gtest/gtest.h>

#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

using testing::Make;
using testing::ThreeDevices;
using testing::TimedOp;

// a (1 s on a GPU, 10 s on the CPU) -> b (4 s, 40 s) -> c (5 s, 50 s); a's output takes 2 s to
// move, b's 3 s. Devices d0, d1 (GPUs, one call each) and c0 (the CPU pool).
Problem Chain() {
  graph::GraphBuilder b("chain");
  const auto a = b.AddOp(TimedOp("a", 1), {{0, 2}});
  const auto x = b.AddOp(TimedOp("b", 4), {{0, 3}});
  const auto y = b.AddOp(TimedOp("c", 5));
  b.AddEdge(a, 0, x);
  b.AddEdge(x, 0, y);
  return Make(b, ThreeDevices(), Objective::kLatency);
}

TEST(LatencyTest, CallsRunOneAfterAnother) {
  const Problem p = Chain();
  // d0 runs a, b and sends b's output: 1 + 4 + 3 = 8; d1 then receives it and runs c: 3 + 5.
  const Evaluation e = EvaluateLatency(p, sim::OnDevices({0, 0, 1}));
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_DOUBLE_EQ(e.devices[DeviceId(0)].load, 8);
  EXPECT_DOUBLE_EQ(e.devices[DeviceId(1)].load, 8);
  EXPECT_DOUBLE_EQ(e.value, 16);
  EXPECT_EQ(e.objective, Objective::kLatency);
}

TEST(LatencyTest, CpuOpsRunWhenReadyAndPayNoTransfers) {
  const Problem p = Chain();
  // a on the CPU ends at 10; d0's call (receive 2, run 4, send 3) ends at 19; c on the CPU at 69.
  const Evaluation e = EvaluateLatency(p, sim::OnDevices({2, 0, 2}));
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_DOUBLE_EQ(e.value, 69);
}

TEST(LatencyTest, ParallelCpuOpsOverlap) {
  graph::GraphBuilder b("fan");
  const auto a = b.AddOp(TimedOp("a", 1, 10));
  const auto x = b.AddOp(TimedOp("x", 1, 7));
  const auto y = b.AddOp(TimedOp("y", 1, 9));
  b.AddEdge(a, 0, x);
  b.AddEdge(a, 0, y);
  const Problem p = Make(b, ThreeDevices(), Objective::kLatency);
  EXPECT_DOUBLE_EQ(EvaluateLatency(p, sim::OnDevices({2, 2, 2})).value,
                   19);                // not 26: the pool has no queue
  EXPECT_DOUBLE_EQ(p.lower_bound, 2);  // a then x or y, on a GPU
}

TEST(LatencyTest, ANonContiguousCallIsInfeasible) {
  const Problem p = Chain();
  // d0 would run a and c, but c needs b, which needs a's result from d0's own call.
  const Evaluation e = EvaluateLatency(p, sim::OnDevices({0, 1, 0}));
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.reason.find("d0"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("not a contiguous split"), std::string::npos) << e.reason;
  EXPECT_NE(e.reason.find("d1"), std::string::npos) << e.reason;  // d1 feeds d0's call and waits
  EXPECT_DOUBLE_EQ(e.value, 1 + 5 + 2 + 3 + 4 + 2 + 3);           // both calls, one after another
}

TEST(LatencyTest, MemoryAndDeviceRulesAsForMaxLoad) {
  const Problem p = Chain();
  const Evaluation e = EvaluateLatency(p, sim::OnDevices({0, 0, 0}));
  EXPECT_TRUE(e.feasible);
  EXPECT_DOUBLE_EQ(e.value, 10);  // one call, no transfers
  EXPECT_EQ(e.devices[DeviceId(0)].ops, 3);
}

}  // namespace
}  // namespace dplace::sim
