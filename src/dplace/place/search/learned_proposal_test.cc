// The learned proposal's moves (learned_proposal.h) against the mixture worked out by hand: how
// often each move is drawn, its Hastings log-ratio, and when the distributions are refreshed.
#include "dplace/place/search/learned_proposal.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <map>
#include <thread>

#include "dplace/place/search/moves.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

// Three independent 1-s ops (units 0, 1, 2) on two GPUs and a CPU, each allowed everywhere.
sim::Problem ThreeOps() {
  graph::GraphBuilder b("three_ops");
  for (const char* name : {"a", "b", "c"}) b.AddOp(sim::testing::TimedOp(name, 1, 10));
  return sim::testing::Make(b, sim::testing::ThreeDevices());
}

// The three ops' units and a search state at a, b on d0 and c on d1.
struct Searched {
  const sim::Problem p = ThreeOps();
  const Units units = MakeUnits(p);
  std::unique_ptr<sim::Evaluator> evaluator = sim::testing::EvaluatorOf(p);
  UnitMoves state{p, units, *evaluator};
  const sim::Placement x = sim::OnDevices({0, 0, 1});
  Searched() { state.Restart(x, ScoreOf(evaluator->Evaluate(x))); }
};

// Fixed distributions, rows by unit; counts its calls.
class Fixed : public LearnedProposal {
 public:
  explicit Fixed(std::vector<double> probabilities) : probabilities_(std::move(probabilities)) {}
  Status Score(const sim::Placement&, std::vector<double>* out,
               const std::function<bool()>&) override {
    ++calls;
    *out = probabilities_;
    return OkStatus();
  }
  int calls = 0;

 private:
  std::vector<double> probabilities_;
};

TEST(LearnedMovesTest, MovesAreDrawnFromTheMixtureWithItsHastingsRatio) {
  Searched at;
  UnitMoves& state = at.state;
  const sim::Placement& x = at.x;
  const std::vector<double> pi = {0.5, 0.3, 0.2,   // unit 0, on d0: weight 0.5
                                  0.9, 0.1, 0.0,   // unit 1, on d0: weight 0.1
                                  0.6, 0.2, 0.2};  // unit 2, on d1: weight 0.8
  Fixed model(pi);
  const double eps = 0.25;
  LearnedMoves moves(at.units, &model, eps, 1000);
  Rng rng(7);
  std::map<std::pair<int, int>, int> drawn;
  std::map<std::pair<int, int>, double> log_ratio;
  constexpr int kDraws = 200000;
  Proposal prop;
  for (int i = 0; i < kDraws; ++i) {
    ASSERT_TRUE(moves.Propose(state, rng, &prop));
    ASSERT_EQ(prop.units.size(), 1u);
    ASSERT_EQ(prop.targets.size(), 1u);
    const std::pair<int, int> key{prop.units[0].value(), prop.targets[0].value()};
    ++drawn[key];
    log_ratio[key] = prop.log_correction;
  }
  EXPECT_EQ(model.calls, 1);  // no move was kept: no refresh
  const double total = 0.5 + 0.1 + 0.8;
  auto prob = [&](int u, int d) { return pi[static_cast<size_t>(u) * 3 + static_cast<size_t>(d)]; };
  auto weight = [&](int u, int d) { return 1 - prob(u, d); };
  for (int u = 0; u < 3; ++u) {
    const int from = x[sim::OpId(u)].value();
    for (int d = 0; d < 3; ++d) {
      if (d == from) continue;
      const double there = (1 - eps) * prob(u, d) / total + eps / (3 * 2);
      const double back_total = total - weight(u, from) + weight(u, d);
      const double back = (1 - eps) * prob(u, from) / back_total + eps / (3 * 2);
      const std::pair<int, int> key{u, d};
      EXPECT_NEAR(drawn[key] / static_cast<double>(kDraws), there, 0.004) << u << "->" << d;
      EXPECT_NEAR(log_ratio[key], std::log(back / there), 1e-12) << u << "->" << d;
    }
  }
}

TEST(LearnedMovesTest, WhereNoUnitWantsToMoveTheMoveIsUniformAndItsWayBackLearned) {
  Searched at;
  // Every unit certain of its device (a, b on d0, c on d1): no unit has weight.
  Fixed model({1, 0, 0, 1, 0, 0, 0, 1, 0});
  const double eps = 0.25;
  LearnedMoves moves(at.units, &model, eps, 1000);
  Rng rng(5);
  Proposal prop;
  ASSERT_TRUE(moves.Propose(at.state, rng, &prop));
  ASSERT_EQ(prop.targets.size(), 1u);
  // There: the uniform proposal alone, 1 / (3 units × 2 devices). Back: the unit's weight after
  // the move is 1 - π(to) = 1, the only weight, and π(from) = 1.
  const double there = 1.0 / 6, back = (1 - eps) * 1 / 1 + eps / 6;
  EXPECT_NEAR(prop.log_correction, std::log(back / there), 1e-12);
}

TEST(LearnedMovesTest, TheDistributionsAreRefreshedEveryNKeptMoves) {
  Searched at;
  UnitMoves& state = at.state;
  Fixed model(std::vector<double>(9, 1.0 / 3));
  LearnedMoves moves(at.units, &model, 0.1, 2);
  Rng rng(3);
  Proposal prop;
  for (int kept = 0; kept < 6; ++kept) {
    ASSERT_TRUE(moves.Propose(state, rng, &prop));
    const Score s = state.Try(prop.units, prop.targets[0], std::numeric_limits<double>::infinity());
    state.Keep(prop.units, prop.targets[0], s);
  }
  ASSERT_TRUE(moves.Propose(state, rng, &prop));
  EXPECT_EQ(model.calls, 4);  // at the first proposal, then after 2, 4 and 6 kept moves
  EXPECT_EQ(moves.refreshes(), 4);
  EXPECT_EQ(moves.proposals(), 7);
}

// Fixed distributions that take 10 ms to compute.
class Slow : public Fixed {
 public:
  using Fixed::Fixed;
  Status Score(const sim::Placement& x, std::vector<double>* out,
               const std::function<bool()>& stop) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return Fixed::Score(x, out, stop);
  }
};

// Scores unit by unit, asking `stop` before each, as the policies do; counts the units scored.
class UnitByUnit : public LearnedProposal {
 public:
  Status Score(const sim::Placement&, std::vector<double>* out,
               const std::function<bool()>& stop) override {
    out->assign(9, 1.0 / 3);
    for (int unit = 0; unit < 3; ++unit) {
      if (stop && stop()) {
        out->clear();
        return OkStatus();
      }
      ++scored;
    }
    return OkStatus();
  }
  int scored = 0;
};

TEST(LearnedMovesTest, OnATimeBudgetTheRefreshesTakeAtMostTheirShareOfTheTime) {
  Searched at;
  UnitMoves& state = at.state;
  Slow model(std::vector<double>(9, 1.0 / 3));
  LearnedMoves moves(at.units, &model, 0.1, 1, /*time_share=*/0.25);
  Rng rng(3);
  Proposal prop;
  const auto began = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < 0.2) {  // every move kept: each proposal is due a refresh by the count
    ASSERT_TRUE(moves.Propose(state, rng, &prop));
    const Score s = state.Try(prop.units, prop.targets[0], std::numeric_limits<double>::infinity());
    state.Keep(prop.units, prop.targets[0], s);
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  }
  // A refresh waits three times its own length after the last: the policy's time is at most a
  // quarter of the whole, and the last refresh.
  EXPECT_GE(moves.refreshes(), 2);
  EXPECT_LE(moves.refresh_s(), 0.25 * elapsed + moves.refresh_s() / moves.refreshes() + 0.01);
  EXPECT_LT(moves.refreshes(), moves.proposals() / 10);
}

// A refresh begun when the search's time is spent is cut: the learned moves end (plain proposals
// go on), with no error, and the scoring stopped at its next unit.
TEST(LearnedMovesTest, ARefreshIsCutWhenTheSearchsTimeIsSpent) {
  Searched at;
  UnitByUnit model;
  bool spent = false;
  LearnedMoves moves(at.units, &model, 0.1, 1, 0, [&spent] { return spent; });
  Rng rng(3);
  Proposal prop;
  ASSERT_TRUE(moves.Propose(at.state, rng, &prop));
  EXPECT_EQ(model.scored, 3);
  const Score s =
      at.state.Try(prop.units, prop.targets[0], std::numeric_limits<double>::infinity());
  at.state.Keep(prop.units, prop.targets[0], s);
  spent = true;
  EXPECT_FALSE(moves.Propose(at.state, rng, &prop));  // due a refresh, and cut
  EXPECT_EQ(model.scored, 3);
  EXPECT_TRUE(moves.cut());
  EXPECT_TRUE(moves.status().ok());
  EXPECT_FALSE(moves.Propose(at.state, rng, &prop));  // not asked again
}

}  // namespace
}  // namespace dplace::place
