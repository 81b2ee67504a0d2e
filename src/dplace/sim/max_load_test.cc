#include "dplace/sim/max_load.h"

#include <gtest/gtest.h>

#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

using testing::Make;
using testing::ThreeDevices;
using testing::TimedOp;

TEST(MaxLoadTest, PaperCommunicationRule) {
  // a (d0) sends its output (transfer cost 2) to b and c on d1 and to e on the CPU.
  // d0: 1 + 2 (sent once) = 3; d1: 4 + 5 + 2 (received once) = 11; c0: 7 (CPU pays no transfers).
  graph::GraphBuilder b("paper");
  const auto a = b.AddOp(TimedOp("a", 1), {{0, 2}});
  const auto x = b.AddOp(TimedOp("b", 4));
  const auto y = b.AddOp(TimedOp("c", 5));
  const auto z = b.AddOp(TimedOp("e", 0.7, 7));
  b.AddEdge(a, 0, x);
  b.AddEdge(a, 0, y);
  b.AddEdge(a, 0, z);
  Problem p = Make(b, ThreeDevices(), Objective::kThroughput);
  Evaluation e = EvaluateMaxLoad(p, sim::OnDevices({0, 1, 1, 2}));
  EXPECT_DOUBLE_EQ(e.devices[DeviceId(0)].load, 3);
  EXPECT_DOUBLE_EQ(e.devices[DeviceId(1)].load, 11);
  EXPECT_DOUBLE_EQ(e.devices[DeviceId(2)].load, 7);
  EXPECT_DOUBLE_EQ(e.value, 11);
  EXPECT_TRUE(e.feasible);
  // With every device paying, the CPU gets its received copy too: 7 + 2.
  Evaluation all =
      EvaluateMaxLoad(p, sim::OnDevices({0, 1, 1, 2}), {.free_communication_kind = ""});
  EXPECT_DOUBLE_EQ(all.devices[DeviceId(2)].load, 9);
}

TEST(MaxLoadTest, MemoryIsTheSumOfOpFootprints) {
  graph::GraphBuilder b("mem");
  graph::Op a = TimedOp("a", 1);
  a.param_bytes = 30;
  graph::Op c = TimedOp("b", 1);
  c.param_bytes = 20;
  b.AddOp(a, {{5, -1}});
  b.AddOp(c);
  Problem p = Make(b, ThreeDevices(50), Objective::kThroughput);
  Evaluation e = EvaluateMaxLoad(p, sim::OnDevices({0, 0}));
  EXPECT_DOUBLE_EQ(e.devices[DeviceId(0)].peak_memory_bytes, 55);
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.reason.find("device d0: peak memory 55 B exceeds capacity 50 B by 5 B"),
            std::string::npos)
      << e.reason;
  EXPECT_TRUE(EvaluateMaxLoad(p, sim::OnDevices({0, 1})).feasible);
  EXPECT_DOUBLE_EQ(EvaluateMaxLoad(p, sim::OnDevices({0, 1})).value, 1);
  EXPECT_GE(EvaluateMaxLoad(p, sim::OnDevices({0, 1})).value, p.lower_bound);
}

}  // namespace
}  // namespace dplace::sim
