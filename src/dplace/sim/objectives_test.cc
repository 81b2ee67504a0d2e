// The objective table: every objective has one row, names parse back, the defaults are rows, and
// each row's evaluator and bound judge its objective.
#include "dplace/sim/objectives.h"

#include <gtest/gtest.h>

#include <set>

#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

TEST(ObjectivesTest, EveryObjectiveHasOneRowWhoseNameParsesBack) {
  std::set<std::string_view> names;
  for (const ObjectiveRow& row : ObjectiveTable()) {
    EXPECT_EQ(&RowOf(row.id), &row);
    EXPECT_EQ(ParseObjective(row.name), row.id);
    EXPECT_TRUE(names.insert(row.name).second) << row.name;
    EXPECT_NE(row.make_evaluator, nullptr) << row.name;
    EXPECT_NE(row.lower_bound, nullptr) << row.name;
  }
  EXPECT_EQ(names.size(), 4u);
}

TEST(ObjectivesTest, AnUnknownNameIsRefusedListingEveryObjective) {
  auto o = ObjectiveNamed("speed", "--objective");
  ASSERT_FALSE(o.ok());
  EXPECT_EQ(o.status().message(),
            "--objective: 'speed' is not step, throughput, latency or pipeline");
}

TEST(ObjectivesTest, PaperFilesDefaultToThroughputAndOtherGraphsToTheStep) {
  EXPECT_EQ(DefaultObjective(/*paper_file=*/true), Objective::kThroughput);
  EXPECT_EQ(DefaultObjective(/*paper_file=*/false), Objective::kStep);
}

TEST(ObjectivesTest, EachRowsEvaluatorJudgesByItsObjectiveAndStaysAboveItsBound) {
  for (const ObjectiveRow& row : ObjectiveTable()) {
    Problem p = testing::IndependentChains(2);
    p.objective = row.id;
    p.lower_bound = row.lower_bound(p);
    auto shared = std::make_shared<const Problem>(p);
    const Evaluation e = MakeEvaluator(shared)->Evaluate(Placement(8, hw::DeviceId(0)));
    EXPECT_EQ(e.objective, row.id) << row.name;
    EXPECT_GT(p.lower_bound, 0) << row.name;
    EXPECT_TRUE(e.feasible) << row.name;
    EXPECT_GE(e.value, p.lower_bound * (1 - 1e-12)) << row.name;
  }
}

}  // namespace
}  // namespace dplace::sim
