// `ilp` on a paper workload: never worse than its warm start (the linear-order optimum), and the
// bound it proves lies below every placement's value.
#include <gtest/gtest.h>

#include "dplace/io/load.h"
#include "dplace/place/exact/exact.h"
#include "dplace/sim/max_load.h"

namespace dplace::place {
namespace {

TEST(IlpTest, StartsFromTheLinearOptimumAndProvesABound) {
  auto loaded = io::LoadGraph(std::string(DPLACE_SOURCE_DIR) +
                              "/testdata/dnn-partitioning/throughput-inputs/LayerGraphs/"
                              "bert24_inference.json");
  ASSERT_TRUE(loaded.ok());
  auto problem = sim::MakeProblem(loaded->graph, loaded->cluster, sim::Objective::kThroughput,
                                  cost::RooflineCostModel());
  ASSERT_TRUE(problem.ok());
  sim::SimulatedEvaluator evaluator(*problem);
  PlaceContext ctx{.evaluator = &evaluator, .budget = {.max_evaluations = 300}};
  auto ilp = MakeIlpPlacer()->Place(*problem, ctx);
  ASSERT_TRUE(ilp.ok()) << ilp.status().message();
  const sim::Evaluation e = sim::EvaluateMaxLoad(*problem, *ilp);
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_LE(e.value, 17.78990625 * (1 + 1e-9));  // the contiguous optimum is a feasible start
  EXPECT_GT(ctx.lower_bound, problem->throughput_lower_bound);
  EXPECT_LE(ctx.lower_bound, e.value * (1 + 1e-9));
  EXPECT_NE(ctx.note.find("bound"), std::string::npos) << ctx.note;
}

}  // namespace
}  // namespace dplace::place
