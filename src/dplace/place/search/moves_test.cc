// The move loop and its acceptors on a hand-worked problem, and the Budget that every search
// spends: two independent 1-s ops on two GPUs (and a CPU at 10 s an op), tensors of no size.
#include "dplace/place/search/moves.h"

#include <gtest/gtest.h>

#include "dplace/place/budget.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

std::vector<sim::DeviceId> Targets(std::initializer_list<int32_t> devices) {
  std::vector<sim::DeviceId> out;
  for (int32_t d : devices) out.emplace_back(d);
  return out;
}

sim::Problem TwoOps() {
  graph::GraphBuilder b("two_ops");
  b.AddOp(sim::testing::TimedOp("a", 1, 10));
  b.AddOp(sim::testing::TimedOp("b", 1, 10));
  return sim::testing::Make(b, sim::testing::ThreeDevices());
}

// Proposes the given proposals in order, then is done.
struct Script {
  std::vector<Proposal> proposals;
  size_t at = 0;
  bool Next(UnitMoves&, Proposal* p) {
    if (at == proposals.size()) return false;
    *p = proposals[at++];
    return true;
  }
};

// TwoOps with its moves begun from `start` (the best tracked, rebasing after every kept move).
struct TwoOpsFrom {
  explicit TwoOpsFrom(sim::Placement placement) : start(std::move(placement)) {
    state.Restart(start, ScoreOf(evaluator->Evaluate(start)));
  }
  const sim::Problem p = TwoOps();
  const Units units = MakeUnits(p);
  const std::unique_ptr<sim::Evaluator> evaluator = sim::testing::EvaluatorOf(p);
  UnitMoves state{p, units, *evaluator, 1, /*track_best=*/true};
  const sim::Placement start;
};

TEST(MovesTest, BestImprovementKeepsTheBestTargetOrNothing) {
  TwoOpsFrom from(sim::Placement(2, sim::DeviceId(0)));
  UnitMoves& state = from.state;
  ASSERT_NEAR(state.score().value, 2, 1e-12);
  BestImprovement accept;
  // Op b to the CPU (10 s) or to d1 (1 s): d1.
  EXPECT_TRUE(accept.Decide(state, {.units = {UnitId(1)}, .targets = Targets({2, 1})}));
  EXPECT_EQ(state.current(), (sim::OnDevices({0, 1})));
  EXPECT_NEAR(state.score().value, 1, 1e-12);
  // Op a to the CPU only: worse, so nothing moves, and the placement is as it was.
  EXPECT_FALSE(accept.Decide(state, {.units = {UnitId(0)}, .targets = Targets({2})}));
  EXPECT_EQ(state.current(), (sim::OnDevices({0, 1})));
  EXPECT_EQ(state.accepted(), 1);
}

// With the budget spent after the first target, the others are not tried (each may be a costly
// evaluation): the first is kept where it improves, and nothing is left applied where none does.
TEST(MovesTest, BestImprovementStopsTryingTargetsWhenTheBudgetIsOut) {
  TwoOpsFrom from(sim::Placement(2, sim::DeviceId(0)));
  UnitMoves& state = from.state;
  int tried = 0;
  BestImprovement accept([&tried] { return tried++ >= 1; });
  // Op b to the CPU (worse) first: the budget is out before d1 is tried.
  EXPECT_FALSE(accept.Decide(state, {.units = {UnitId(1)}, .targets = Targets({2, 1})}));
  EXPECT_EQ(state.current(), from.start);
  tried = 0;
  EXPECT_TRUE(accept.Decide(state, {.units = {UnitId(1)}, .targets = Targets({1, 2})}));
  EXPECT_EQ(state.current(), (sim::OnDevices({0, 1})));
}

TEST(MovesTest, MetropolisAtZeroTemperatureTakesNoWorseMove) {
  TwoOpsFrom from(sim::OnDevices({0, 1}));
  UnitMoves& state = from.state;
  const sim::Placement& split = from.start;
  Rng rng(1);
  Metropolis accept(rng, [] { return 0.0; });
  EXPECT_FALSE(
      accept.Decide(state, {.units = {UnitId(0)}, .targets = Targets({2})}));  // 10 s: rejected
  EXPECT_EQ(state.current(), split);
  // An equal move (1 s either way) is below current * (1 + 0): rejected too; a high temperature
  // takes the worse move, and the best stays the split.
  Metropolis hot(rng, [] { return 1e9; });
  EXPECT_TRUE(hot.Decide(state, {.units = {UnitId(0)}, .targets = Targets({2})}));
  EXPECT_EQ(state.current(), (sim::OnDevices({2, 1})));
  EXPECT_EQ(state.best(), split);
  EXPECT_EQ(accept.proposed() + hot.proposed(), 2);
}

TEST(MovesTest, MetropolisWeighsAMoveByItsHastingsRatio) {
  TwoOpsFrom from(sim::OnDevices({2, 1}));  // a on the CPU: 10 s
  UnitMoves& state = from.state;
  const sim::Placement& slow = from.start;
  Rng rng(1);
  Metropolis accept(rng, [] { return 0.01; });
  // An improvement (10 s -> 1 s) whose way back is e^-1000 times as likely as the way there is
  // refused: exp(0.9 / 0.01 - 1000) is nothing.
  Proposal unlikely{.units = {UnitId(0)}, .targets = Targets({0}), .log_correction = -1000};
  EXPECT_FALSE(accept.Decide(state, unlikely));
  EXPECT_EQ(state.current(), slow);
  // The same move with its way back as likely is kept.
  unlikely.log_correction = 0;
  EXPECT_TRUE(accept.Decide(state, unlikely));
  // A worsening (1 s -> 10 s on the CPU) the ratio favours by e^1000 is kept at this temperature.
  Proposal favoured{.units = {UnitId(0)}, .targets = Targets({2}), .log_correction = 1000};
  EXPECT_TRUE(accept.Decide(state, favoured));
  EXPECT_EQ(state.current(), slow);
}

TEST(MovesTest, TheLoopStopsWhenTheProposerIsDoneOrTheBudgetIsOut) {
  TwoOpsFrom from(sim::Placement(2, sim::DeviceId(2)));  // both on the CPU
  UnitMoves& state = from.state;
  BestImprovement accept;
  Script script{
      {{.units = {UnitId(0)}, .targets = Targets({0})}, {.units = {UnitId(1)}, .targets = {}}}};
  int outs = 0;
  RunMoves(state, script, accept, [&] { return ++outs > 100; });
  EXPECT_EQ(script.at, 2u);  // both proposed; the empty one moved nothing
  EXPECT_EQ(state.current(), (sim::OnDevices({0, 2})));
  Script more{{{.units = {UnitId(1)}, .targets = Targets({1})}}};
  RunMoves(state, more, accept, [] { return true; });  // out at once
  EXPECT_EQ(more.at, 0u);
}

TEST(BudgetTest, SpentRemainingAndSplit) {
  const sim::Problem p = TwoOps();
  const auto evaluator = sim::testing::EvaluatorOf(p);
  const Budget budget({.evaluations = 10}, *evaluator);
  EXPECT_EQ(budget.Spent(), 0);
  for (int i = 0; i < 4; ++i) evaluator->Evaluate(sim::Placement(2, sim::DeviceId(0)));
  EXPECT_NEAR(budget.Spent(), 0.4, 1e-12);
  EXPECT_EQ(budget.Remaining().evaluations, 6);
  EXPECT_EQ(budget.Split(0.5).evaluations, 3);
  EXPECT_EQ(budget.Parallel(4).evaluations, 1);
  EXPECT_EQ(budget.Remaining().seconds, 0);  // no time limit: none handed on
  for (int i = 0; i < 6; ++i) evaluator->Evaluate(sim::Placement(2, sim::DeviceId(0)));
  EXPECT_TRUE(budget.Out());
  EXPECT_EQ(budget.Remaining().evaluations, 1);  // a member handed it stops at once
  // Without limits, a search's own default applies; with a time limit it does not.
  EXPECT_EQ(Budget({}, *evaluator, 50).limits().evaluations, 50);
  EXPECT_EQ(Budget({.seconds = 1}, *evaluator, 50).limits().evaluations, 0);
  EXPECT_GT(Budget({.seconds = 100}, *evaluator).Remaining().seconds, 99);
}

}  // namespace
}  // namespace dplace::place
