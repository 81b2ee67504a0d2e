#include "dplace/place/search/move_scorer.h"

#include <gtest/gtest.h>

#include "dplace/base/rng.h"
#include "dplace/io/test_files.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

using sim::testing::Fork;
using sim::testing::ThreeDevices;

TEST(MoveScorerTest, FeaturesSayWhatAMoveChangesOnTheForkOfTheTests) {
  // a (1 s) on d0 sends 1 byte (1 s) to x and to y; x on d0, y on d1: y waits for its transfer, the
  // step is 3 s on the path a -> y.
  const sim::Problem p = Fork(ThreeDevices());
  const Units units = MakeUnits(p);
  ASSERT_EQ(units.size(), 3u);
  IdVector<sim::OpId, UnitId> unit_of_op(3);
  for (UnitId u : units.ids()) unit_of_op[units[u].ops[0]] = u;
  const sim::Placement placed = {sim::DeviceId(0), sim::DeviceId(0), sim::DeviceId(1)};
  PerUnit<sim::DeviceId> device(3);
  for (UnitId u : units.ids()) device[u] = placed[units[u].ops[0]];
  const auto evaluator = sim::testing::EvaluatorOf(p);
  sim::Timing timing;
  const sim::Evaluation e = evaluator->EvaluateTimed(placed, &timing);
  ASSERT_NEAR(e.value, 3, 1e-9);
  MoveContext context(p, units, unit_of_op);
  EXPECT_FALSE(context.ready());
  context.Refresh(e, timing.critical_path);
  ASSERT_TRUE(context.ready());
  const auto device_of = [&device](UnitId u) { return device[u]; };
  const UnitId y = unit_of_op[sim::OpId(2)], x = unit_of_op[sim::OpId(1)];
  // y back to d0: its input no longer crosses (−1 s of 3), same compute, on the critical path.
  const MoveFeatures back = context.Features(y, sim::DeviceId(0), device_of);
  EXPECT_EQ(back[0], 1);
  EXPECT_EQ(back[1], 1);
  EXPECT_NEAR(back[2], -1.0 / 3, 1e-9);
  EXPECT_NEAR(back[3], 0, 1e-9);
  EXPECT_NEAR(back[5], -1.0 / 3, 1e-9);
  // x to the CPU: a transfer more and its CPU time (1 s, as on a GPU: the op says so).
  const MoveFeatures away = context.Features(x, sim::DeviceId(2), device_of);
  EXPECT_NEAR(away[2], 1.0 / 3, 1e-9);
  EXPECT_EQ(away[6], 0);  // no memory limit
}

TEST(MoveScorerTest, LearnedWeightsFitExactLabelsAndCensoredOnesOnlyPushUp) {
  MoveScorer scorer(MoveScorer::Kind::kLearned);
  Rng rng(3);
  const std::array<double, kMoveFeatures> truth = {0.001, 0, 0.5, 0.8, 0.1, 0.3, 2};
  for (int i = 0; i < 400; ++i) {
    MoveFeatures f{1};
    for (int k = 1; k < kMoveFeatures; ++k) f[k] = rng.Uniform() - 0.5;
    double y = 0;
    for (int k = 0; k < kMoveFeatures; ++k) y += truth[k] * f[k];
    scorer.Learn(f, y, /*exact=*/true);
  }
  for (int k = 0; k < kMoveFeatures; ++k) EXPECT_NEAR(scorer.weights()[k], truth[k], 1e-3) << k;
  EXPECT_EQ(scorer.examples(), 400);
  // A censored label below the prediction says nothing; above it, it moves the prediction up.
  const MoveFeatures f = {1, 1, 0.1, 0.1, 0, 0.2, 0};
  const double before = scorer.Predict(f);
  scorer.Learn(f, before - 1, /*exact=*/false);
  EXPECT_EQ(scorer.Predict(f), before);
  scorer.Learn(f, before + 1, /*exact=*/false);
  EXPECT_GT(scorer.Predict(f), before);
  // The hand-set scorer learns nothing.
  MoveScorer hand(MoveScorer::Kind::kHand);
  const auto w = hand.weights();
  hand.Learn(f, 5, true);
  EXPECT_EQ(hand.weights(), w);
}

// A pretrained scorer (mcmc.guide_model): written and read back the same, its weights the start
// of online learning; a file that is not one says where in one line.
TEST(MoveScorerTest, APretrainedScorerRoundTripsAndABadFileSaysWhere) {
  const std::array<double, kMoveFeatures> w = {0.01, 0.02, -1.5, 4, -0.1, 2, 0};
  const MoveScorer pretrained = MoveScorer::Pretrained(w);
  EXPECT_EQ(pretrained.weights(), w);
  testing::TempDir dir;
  auto read = MoveScorer::Read(dir.Write("s.txt", pretrained.Text()));
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(read->weights(), w);
  // Online learning starts from the weights and moves them (towards a label of 1 here).
  MoveScorer learning = *read;
  const MoveFeatures f = {1, 1, 0.1, 0.1, 0, 0.2, 0};
  const double before = learning.Predict(f);
  learning.Learn(f, 1, /*exact=*/true);
  EXPECT_GT(learning.Predict(f), before);
  auto error = [&](const std::string& content) {
    auto r = MoveScorer::Read(dir.Write("bad.txt", content));
    return r.ok() ? std::string("ok") : std::string(r.status().message());
  };
  EXPECT_NE(error("dplace-graph/1\n1 2 3\n").find("line 1: not a move scorer"), std::string::npos);
  EXPECT_NE(error("dplace-move-scorer/1\n1 2 3\n").find("line 2: weight 4 of 7"),
            std::string::npos);
  EXPECT_NE(error("dplace-move-scorer/1\n1 2 3 4 5 6 nan\n").find("weight 7"), std::string::npos);
  EXPECT_NE(error("dplace-move-scorer/1\n1 2 3 4 5 6 7 8\n").find("more than 7"),
            std::string::npos);
  EXPECT_FALSE(MoveScorer::Read(dir.Path("missing.txt")).ok());
}

TEST(MoveScorerTest, TheBundledFitIsTheModelsFileCompiledIn) {
  auto file = MoveScorer::Read(std::string(DPLACE_SOURCE_DIR) + "/models/move_scorer.txt");
  auto bundled = MoveScorer::ForGuide("learned", "bundled");
  ASSERT_TRUE(file.ok() && bundled.ok());
  EXPECT_EQ(bundled->weights(), file->weights());
  EXPECT_NE(bundled->weights(), MoveScorer::ForGuide("learned", "zero")->weights());
}

}  // namespace
}  // namespace dplace::place
