// The contiguous placers, made through their factories: `contiguous` (cuts by bytes and memory,
// moved by simulation) and `modules` (cuts between whole modules).
#include "dplace/place/search/contiguous.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "dplace/place/search/module_splits.h"
#include "dplace/place/test_placing.h"

namespace dplace::place {
namespace {

using sim::testing::Make;
using sim::testing::ThreeDevices;
using sim::testing::TimedOp;
using testing::Judged;

Judged PlaceBy(const std::string& name, const sim::Problem& p) {
  return testing::PlaceWith(name == "modules" ? *MakeModuleSplitsPlacer() : *MakeContiguousPlacer(),
                            p);
}

// A chain of six 1-s ops holding 10 parameter bytes each, with outputs of `bytes[i]` (op i to op
// i + 1); op 5 CPU-only when `cpu_tail`.
sim::Problem WeightedChain(const std::vector<double>& bytes, double memory, bool cpu_tail = false) {
  graph::GraphBuilder b("chain");
  graph::OpId prev{-1};
  for (size_t i = 0; i < 6; ++i) {
    graph::Op op = TimedOp("op" + std::to_string(i), 1);
    op.param_bytes = 10;
    if (cpu_tail && i == 5) op.device_kinds = {"cpu"};
    const graph::OpId id = b.AddOp(std::move(op), {{i < 5 ? bytes[i] : 0, -1}});
    if (prev >= 0) b.AddEdge(prev, 0, id);
    prev = id;
  }
  return Make(b, ThreeDevices(memory));
}

TEST(ContiguousTest, CutsWhereTheFewestBytesCrossThatMemoryAllows) {
  // Footprints 12, 11.5, 10.5, 11, 12, 10 (parameters + output). A GPU of 46 bytes holds ops 0-3
  // at most, so the chain needs two runs; the runs that fit cut after op 1 (1.5 bytes cross),
  // op 2 (0.5) or op 3 (1): after op 2, for 6 s of compute and 0.5 s of transfer.
  const sim::Problem p = WeightedChain({2, 1.5, 0.5, 1, 2}, 46);
  const Judged r = PlaceBy("contiguous", p);
  EXPECT_EQ(r.placement, (sim::OnDevices({0, 0, 0, 1, 1, 1})));
  EXPECT_TRUE(r.evaluation.feasible) << r.evaluation.reason;
  EXPECT_NEAR(r.evaluation.value, 6.5, 1e-9);
  EXPECT_EQ(r.note, "2 contiguous runs");
  // With room for everything the chain stays on one device.
  const Judged one = PlaceBy("contiguous", WeightedChain({2, 1.5, 0.5, 1, 2}, 1000));
  EXPECT_EQ(one.placement, (sim::OnDevices({0, 0, 0, 0, 0, 0})));
  EXPECT_NEAR(one.evaluation.value, 6, 1e-9);
}

TEST(ContiguousTest, HostForCpuOnlyOpsAndNoRunOverADisallowedDevice) {
  // Op 5 may only run on the CPU; the other five need two GPUs (36 bytes each): the cut after
  // op 2 is the cheapest that fits (0.5 bytes).
  const sim::Problem p = WeightedChain({2, 1.5, 0.5, 1, 2}, 36, /*cpu_tail=*/true);
  const Judged r = PlaceBy("contiguous", p);
  EXPECT_EQ(r.placement, (sim::OnDevices({0, 0, 0, 1, 1, 2})));
  EXPECT_TRUE(r.evaluation.feasible) << r.evaluation.reason;
}

TEST(ContiguousTest, MovesTheCutToWhereTheSimulatedStepIsShortest) {
  // a (1 s) feeds x (2 s) and b (2 s), which both feed c (1 s); a and x output 1 byte, b 0.5.
  // Parameters of 10 bytes each and GPUs of 35 bytes: two runs. Cutting after a moves the fewest
  // bytes (a's 1) but leaves x and b in turn on the second GPU: 1 + 1 + 2 + 2 + 1 = 7 s. Cutting
  // after x moves 2 bytes while x and b run side by side: a, x on the first GPU (0-3 s), a's
  // output over (1-2 s), b (2-4 s), x's output over (3-4 s), c (4-5 s): 5 s.
  graph::GraphBuilder b("diamond");
  auto op = [&](const char* name, double seconds, double out_bytes) {
    graph::Op o = TimedOp(name, seconds);
    o.param_bytes = 10;
    return b.AddOp(std::move(o), {{out_bytes, -1}});
  };
  const auto a = op("a", 1, 1), x = op("x", 2, 1), y = op("b", 2, 0.5), c = op("c", 1, 0);
  b.AddEdge(a, 0, x);
  b.AddEdge(a, 0, y);
  b.AddEdge(x, 0, c);
  b.AddEdge(y, 0, c);
  const Judged r = PlaceBy("contiguous", Make(b, ThreeDevices(35)));
  EXPECT_EQ(r.placement, (sim::OnDevices({0, 0, 1, 1})));
  EXPECT_TRUE(r.evaluation.feasible) << r.evaluation.reason;
  EXPECT_NEAR(r.evaluation.value, 5, 1e-9);
}

// Three residual blocks of 100 parameter bytes after an embedding, on GPUs of 250 bytes: no GPU
// holds the three, and under the eager runtime a cut inside a block (its MatMul on one device, its
// residual Add on the other) does not run. `modules` cuts between blocks: a device map that runs.
TEST(ModuleSplitsTest, CutsBetweenBlocksWhereADeviceMapRuns) {
  graph::GraphBuilder b("residual");
  graph::OpId x = b.AddOp(TimedOp("/emb/Gather", 1), {{1, -1}});
  for (int i = 0; i < 3; ++i) {
    const std::string block = "/blocks." + std::to_string(i);
    graph::Op matmul = TimedOp(block + "/a/MatMul", 1);
    matmul.param_bytes = 100;
    const graph::OpId a = b.AddOp(matmul, {{1, -1}});
    const graph::OpId add = b.AddOp(TimedOp(block + "/Add", 1), {{1, -1}});
    b.AddEdge(x, 0, a);
    b.AddEdge(x, 0, add);
    b.AddEdge(a, 0, add);
    x = add;
  }
  sim::Problem p = Make(b, ThreeDevices(250));
  sim::UseEagerRuntime(p);
  const Judged placed = PlaceBy("modules", p);
  EXPECT_TRUE(placed.evaluation.feasible) << placed.evaluation.reason;
  for (int i = 0; i < 3; ++i) {  // each block whole: its MatMul and its Add together
    EXPECT_EQ(placed.placement[graph::OpId(1 + 2 * i)], placed.placement[graph::OpId(2 + 2 * i)]);
  }
  EXPECT_NE(placed.placement[graph::OpId(1)], placed.placement[graph::OpId(5)]);
}

}  // namespace
}  // namespace dplace::place
