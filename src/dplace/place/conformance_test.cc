// The conformance suite: every registered placer, on the same small problems, must return a
// complete placement that respects device kinds and co-location, a feasible one where one exists,
// and the same placement for the same seed.
#include <gtest/gtest.h>

#include "dplace/graph/graph_builder.h"
#include "dplace/io/load.h"
#include "dplace/place/baseline/baseline.h"
#include "dplace/place/registry.h"
#include "dplace/sim/constraints.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

// 40 ops in layers of 4; ops 0..3 share a co-location group; ops 36..39 may only run on a GPU.
// Each op has 10 parameter bytes; `memory` bytes per GPU.
sim::Problem LayeredProblem(double memory, sim::Objective objective) {
  graph::GraphBuilder b("layered40");
  const graph::GroupId grp = b.Group("head");
  for (int i = 0; i < 40; ++i) {
    graph::Op op = sim::testing::TimedOp("op" + std::to_string(i), 1 + i % 3);
    op.param_bytes = 10;
    if (i < 4) op.colocation = grp;
    if (i >= 36) op.device_kinds = {"gpu"};
    const graph::OpId id = b.AddOp(op, {{1, -1}});
    if (i >= 4) {
      b.AddEdge(id - 4, 0, id);
      b.AddEdge(id - 4 + (i % 4 == 3 ? -3 : 1), 0, id);
    }
  }
  hw::ClusterBuilder cb("two_gpus_cpu");
  cb.AddDevice({.name = "d0", .kind = "gpu", .memory_bytes = memory});
  cb.AddDevice({.name = "d1", .kind = "gpu", .memory_bytes = memory});
  cb.AddDevice({.name = "c0", .kind = "cpu", .memory_bytes = memory});
  cb.SetDefaultLink({.bandwidth_bytes_per_s = 10, .latency_s = 0});
  auto c = std::make_shared<const hw::Cluster>(std::move(cb.Build()).value());
  return sim::testing::Make(b, c, objective);
}

sim::Problem PaperProblem() {
  auto loaded = io::LoadGraph(std::string(DPLACE_SOURCE_DIR) +
                              "/testdata/dnn-partitioning/throughput-inputs/LayerGraphs/"
                              "bert24_training.json");
  DPLACE_CHECK(loaded.ok());
  return std::move(sim::MakeProblem(loaded->graph, loaded->cluster, sim::Objective::kThroughput,
                                    cost::RooflineCostModel()))
      .value();
}

struct Outcome {
  sim::Placement placement;
  sim::Evaluation evaluation;
};

Outcome PlaceWith(const PlacerEntry& entry, const sim::Problem& p, uint64_t seed) {
  sim::SimulatedEvaluator evaluator(p);
  // `expert` gets the round-robin plan as its given plan.
  sim::Placement plan;
  // An evaluation budget keeps the search and solver-based placers quick and reproducible (for ilp
  // it bounds branch-and-bound nodes); the time limit is only a safety net.
  PlaceContext ctx{.evaluator = &evaluator,
                   .seed = seed,
                   .budget = {.max_evaluations = 300, .time_limit_s = 30}};
  if (entry.needs_plan) {
    auto rr = MakePlacer("round_robin");
    plan = std::move((*rr)->Place(p, ctx)).value();
    ctx.given_plan = &plan;
  }
  auto placer = entry.make();
  auto placement = placer->Place(p, ctx);
  EXPECT_TRUE(placement.ok()) << entry.name << ": " << placement.status().message();
  if (!placement.ok()) return {};
  return {*placement, evaluator.Evaluate(*placement)};
}

class ConformanceTest : public ::testing::TestWithParam<PlacerEntry> {};

TEST_P(ConformanceTest, CompleteAndRespectsKindsAndColocation) {
  for (const sim::Problem& p :
       {LayeredProblem(hw::kUnlimited, sim::Objective::kStep),
        LayeredProblem(hw::kUnlimited, sim::Objective::kThroughput), PaperProblem()}) {
    if (GetParam().paper_model_only && p.objective != sim::Objective::kThroughput) continue;
    Outcome r = PlaceWith(GetParam(), p, 1);
    ASSERT_EQ(static_cast<int>(r.placement.size()), p.num_ops());
    EXPECT_EQ(sim::FindViolation(p, r.placement), "") << GetParam().name;
    EXPECT_TRUE(r.evaluation.feasible) << GetParam().name << ": " << r.evaluation.reason;
    EXPECT_GE(r.evaluation.value, p.LowerBound() * (1 - 1e-12));
  }
}

TEST_P(ConformanceTest, FeasibleWhereFeasibleExists) {
  // 400 parameter bytes plus 40 output bytes in all; 240 per device: no device holds everything,
  // but splits exist.
  sim::Problem p = LayeredProblem(240, sim::Objective::kThroughput);
  Outcome r = PlaceWith(GetParam(), p, 1);
  if (GetParam().name == "single") {
    // Its contract is one device; none fits here, and the evaluation must say so.
    EXPECT_FALSE(r.evaluation.feasible);
    EXPECT_NE(r.evaluation.reason.find("exceeds capacity"), std::string::npos)
        << r.evaluation.reason;
    return;
  }
  EXPECT_TRUE(r.evaluation.feasible) << GetParam().name << ": " << r.evaluation.reason;
}

TEST_P(ConformanceTest, SameSeedSamePlacement) {
  sim::Problem p =
      LayeredProblem(hw::kUnlimited, GetParam().paper_model_only ? sim::Objective::kThroughput
                                                                 : sim::Objective::kStep);
  for (uint64_t seed : {1u, 42u}) {
    EXPECT_EQ(PlaceWith(GetParam(), p, seed).placement, PlaceWith(GetParam(), p, seed).placement)
        << GetParam().name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllPlacers, ConformanceTest,
                         ::testing::ValuesIn(Placers().begin(), Placers().end()),
                         [](const auto& test) { return std::string(test.param.name); });

TEST(RegistryTest, UnknownNameListsTheKnownOnes) {
  auto p = MakePlacer("magic");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("known: single, round_robin"), std::string::npos);
}

TEST(SinglePlacerTest, PicksTheFastestDeviceThatFits) {
  // On the paper's machine the best single device is an accelerator (the CPU is 10x slower).
  sim::Problem p = PaperProblem();
  sim::SimulatedEvaluator evaluator(p);
  PlaceContext ctx{.evaluator = &evaluator};
  auto placement = MakeSinglePlacer()->Place(p, ctx);
  ASSERT_TRUE(placement.ok());
  EXPECT_EQ(p.c().device((*placement)[0]).kind, "accel");
  EXPECT_EQ(evaluator.evaluations(), p.num_devices());
}

}  // namespace
}  // namespace dplace::place
