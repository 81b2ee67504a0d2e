// Coarsening (coarsen.h): the coarse graph is acyclic with summed costs, co-location survives the
// round trip, and placing through it stays feasible.
#include "dplace/place/coarsen.h"

#include <gtest/gtest.h>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dplace/graph/synthetic.h"
#include "dplace/graph/training.h"
#include "dplace/place/test_placing.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

using sim::testing::Make;
using sim::testing::ThreeDevices;
using sim::testing::TimedOp;
using testing::Made;

// A chain of `n` 1-s ops, each sending 1 byte to the next.
sim::Problem Chain(int n) {
  graph::GraphBuilder b("chain");
  for (int i = 0; i < n; ++i) {
    const graph::OpId op = b.AddOp(TimedOp("op" + std::to_string(i), 1), {{1, -1}});
    if (i > 0) b.AddEdge(op - 1, 0, op);
  }
  return Make(b, ThreeDevices());
}

// A synthetic training graph (forward, backward, update; each layer's three co-located).
sim::Problem Training(int forward_ops) {
  const graph::Graph forward =
      graph::MakeLayeredGraph({.num_ops = forward_ops, .width = 8, .seed = 3});
  auto g = std::make_shared<const graph::Graph>(graph::ExpandTraining(forward).value());
  hw::ClusterBuilder b("gpus");
  for (int d = 0; d < 4; ++d) {
    b.AddDevice({.name = "gpu" + std::to_string(d),
                 .kind = "gpu",
                 .memory_bytes = 64e9,
                 .peak_flops = 1e13});
  }
  b.SetDefaultLink({.bandwidth_bytes_per_s = 10e9, .latency_s = 1e-5});
  auto c = std::make_shared<const hw::Cluster>(b.Build().value());
  return sim::MakeProblem(g, c, sim::Objective::kStep, cost::RooflineCostModel()).value();
}

TEST(CoarsenTest, AChainBecomesIntervalsWithSummedTimes) {
  const sim::Problem p = Chain(100);
  auto c = Coarsen(p, {.target_ops = 10});
  ASSERT_TRUE(c.ok()) << c.status().message();
  const sim::Problem& coarse = *c->problem;
  EXPECT_EQ(coarse.num_ops(), 10);  // ten 10-s intervals
  for (graph::OpId op{0}; op < coarse.num_ops(); ++op) {
    EXPECT_DOUBLE_EQ(coarse.costs.OpTime(op, sim::DeviceId(0)), 10) << op;
  }
  // Intervals of consecutive ops: op i in interval i / 10; one edge between neighbours.
  for (int i = 0; i < 100; ++i) EXPECT_EQ(c->coarse_of[sim::OpId(i)], sim::OpId(i / 10));
  EXPECT_EQ(coarse.g().edges().size(), 9u);
  // Placing the coarse chain on one GPU = the chain on one GPU.
  const sim::Placement fine = c->Expand(sim::Placement(10, sim::DeviceId(1)));
  EXPECT_EQ(fine, sim::Placement(100, sim::DeviceId(1)));
  EXPECT_DOUBLE_EQ(
      sim::testing::EvaluatorOf(coarse)->Evaluate(sim::Placement(10, sim::DeviceId(1))).value,
      sim::testing::EvaluatorOf(p)->Evaluate(fine).value);
}

TEST(CoarsenTest, TrainingGraphKeepsItsGroupsTogether) {
  const sim::Problem p = Training(2000);
  auto c = Coarsen(p, {.target_ops = 300});
  ASSERT_TRUE(c.ok()) << c.status().message();  // Build() checks the coarse graph is acyclic
  const sim::Problem& coarse = *c->problem;
  // 6,000 ops -> 1,006: the backward ops fill intervals group by group (keyed order); the
  // depth-first order alone gave 2,269.
  EXPECT_LT(coarse.num_ops(), p.num_ops() / 5);
  // Total work is kept on every device.
  double fine_total = 0, coarse_total = 0;
  for (graph::OpId op{0}; op < p.num_ops(); ++op)
    fine_total += p.costs.OpTime(op, sim::DeviceId(0));
  for (graph::OpId op{0}; op < coarse.num_ops(); ++op)
    coarse_total += coarse.costs.OpTime(op, sim::DeviceId(0));
  EXPECT_NEAR(coarse_total, fine_total, 1e-9 * fine_total);
  // Any coarse placement that keeps coarse groups together keeps the original groups together.
  sim::Placement coarse_plan(static_cast<size_t>(coarse.num_ops()));
  for (graph::OpId op{0}; op < coarse.num_ops(); ++op) {
    const graph::GroupId grp = coarse.g().op(op).colocation;
    coarse_plan[op] = sim::DeviceId((grp == graph::kNoGroup ? op.value() : grp.value()) % 4);
  }
  const sim::Placement fine = c->Expand(coarse_plan);
  IdVector<graph::GroupId, std::set<sim::DeviceId>> devices(p.g().groups().size());
  for (graph::OpId op{0}; op < p.num_ops(); ++op) {
    const graph::GroupId grp = p.g().op(op).colocation;
    if (grp != graph::kNoGroup) devices[grp].insert(fine[op]);
  }
  for (const auto& d : devices) EXPECT_LE(d.size(), 1u);
}

TEST(CoarsenTest, PlacingThroughTheCoarseGraphIsFeasibleAndRefinementNeverHurts) {
  const sim::Problem p = Training(1500);
  for (const char* name : {"heft", "m_sct", "metis", "mcmc"}) {
    const std::unique_ptr<Placer> placer = Made(name);
    if (placer == nullptr) continue;  // not built in
    const auto evaluator = sim::testing::EvaluatorOf(p);
    auto placed = PlaceCoarsened(
        *placer, p, {.evaluator = evaluator.get(), .seed = 5, .limits = {.evaluations = 300}},
        {.target_ops = 200, .refine = false});
    ASSERT_TRUE(placed.ok()) << name << ": " << placed.status().message();
    const sim::Evaluation e = sim::testing::EvaluatorOf(p)->Evaluate(placed->placement);
    EXPECT_TRUE(e.feasible) << name << ": " << e.reason;
    EXPECT_NE(placed->note.find("coarsened " + std::to_string(p.num_ops()) + " -> "),
              std::string::npos)
        << placed->note;
    EXPECT_GT(placed->stats.seconds, 0) << name;
    // Refinement starts from the un-coarsened placement and only takes improving moves.
    const std::unique_ptr<Placer> again = Made(name);
    const auto evaluator2 = sim::testing::EvaluatorOf(p);
    auto refined = PlaceCoarsened(
        *again, p,
        {.evaluator = evaluator2.get(), .seed = 5, .limits = {.evaluations = 300, .seconds = 2}},
        {.target_ops = 200, .refine = true});
    ASSERT_TRUE(refined.ok());
    EXPECT_LE(sim::testing::EvaluatorOf(p)->Evaluate(refined->placement).value,
              e.value * (1 + 1e-12))
        << name;
  }
}

TEST(CoarsenTest, SmallGraphsArePlacedDirectly) {
  const sim::Problem p = Chain(20);
  const std::unique_ptr<Placer> placer = Made("heft");
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto placed = PlaceCoarsened(*placer, p, {.evaluator = evaluator.get()}, {.target_ops = 10});
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(placed->note.find("coarsened"), std::string::npos);
}

}  // namespace
}  // namespace dplace::place
