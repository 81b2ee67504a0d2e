// The list schedulers (and the rules placed beside them in the memory test), made through their
// factories.
#include "dplace/place/schedule/list_scheduler.h"

#include <gtest/gtest.h>

#include <memory>
#include <string_view>

#include "dplace/place/test_placing.h"

namespace dplace::place {
namespace {

using sim::testing::Make;
using sim::testing::ThreeDevices;
using sim::testing::TimedOp;
using testing::Judged;
using testing::Made;

Judged PlaceBy(std::string_view name, const sim::Problem& p) {
  return testing::PlaceWith(*Made(name), p);
}

TEST(ListSchedulerTest, HeftAndEtfRunIndependentChainsInParallel) {
  const sim::Problem p = sim::testing::IndependentChains(2);
  for (const char* name : {"heft", "m_etf", "m_sct"}) {
    const Judged r = PlaceBy(name, p);
    EXPECT_NEAR(r.evaluation.value, 4, 1e-9) << name;
    EXPECT_EQ(r.placement[sim::OpId(0)], r.placement[sim::OpId(3)])
        << name << ": a chain stays on one device";
  }
  EXPECT_NEAR(PlaceBy("single", p).evaluation.value, 8, 1e-9);
}

TEST(ListSchedulerTest, FavouriteChildOfAChainIsTheNextOp) {
  // a -> b -> c, and a -> d: the LP keeps one child of a on a's device; b's only child is c.
  graph::GraphBuilder b("fork");
  const auto a = b.AddOp(TimedOp("a", 1), {{5, -1}});
  const auto x = b.AddOp(TimedOp("b", 1), {{5, -1}});
  const auto c = b.AddOp(TimedOp("c", 1));
  const auto d = b.AddOp(TimedOp("d", 1));
  b.AddEdge(a, 0, x);
  b.AddEdge(x, 0, c);
  b.AddEdge(a, 0, d);
  const sim::Problem p = Make(b, ThreeDevices());
  const sim::PerOp<sim::OpId> favourite = FavouriteChildren(p, 10);
  ASSERT_EQ(favourite.size(), 4u);
  EXPECT_TRUE(favourite[a] == x || favourite[a] == d);
  EXPECT_EQ(favourite[x], c);
  EXPECT_EQ(favourite[c], sim::OpId(-1));
}

TEST(ListSchedulerTest, MemoryKeepsUnitsOffAFullDevice) {
  // Each op holds 10 parameter bytes; a GPU holds 25: at most two ops per GPU, the rest on the CPU.
  graph::GraphBuilder b("memory");
  for (int i = 0; i < 6; ++i) {
    graph::Op op = TimedOp("op" + std::to_string(i), 1);
    op.param_bytes = 10;
    b.AddOp(std::move(op));
  }
  const sim::Problem p = Make(b, ThreeDevices(25));
  for (const char* name : {"heft", "m_topo", "m_etf", "m_sct", "metis", "scotch", "expert"}) {
    if (Made(name) == nullptr) continue;  // a partitioner not built in
    const Judged r = PlaceBy(name, p);
    EXPECT_TRUE(r.evaluation.feasible) << name << ": " << r.evaluation.reason;
  }
}

TEST(ExpertRuleTest, ContiguousHalvesAndTheHostForCpuOnlyOps) {
  // A chain of eight 1-s ops, the last CPU-only: the first seven split 4 / 3 over the two GPUs in
  // order (the first GPU takes its half, 3.5 s, then one more op), the last on the CPU.
  graph::GraphBuilder b("chain");
  graph::OpId prev{-1};
  for (int i = 0; i < 8; ++i) {
    graph::Op op = TimedOp("op" + std::to_string(i), 1);
    if (i == 7) op.device_kinds = {"cpu"};
    const graph::OpId id = b.AddOp(std::move(op), {{1, -1}});
    if (prev >= 0) b.AddEdge(prev, 0, id);
    prev = id;
  }
  const sim::Problem p = Make(b, ThreeDevices());
  const Judged r = PlaceBy("expert", p);
  EXPECT_EQ(r.placement, (sim::OnDevices({0, 0, 0, 0, 1, 1, 1, 2})));
}

}  // namespace
}  // namespace dplace::place
