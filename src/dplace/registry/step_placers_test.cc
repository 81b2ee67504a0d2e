// The step-time placers on hand-worked problems (sim/test_problems.h: two GPUs and a CPU, links of
// 1 byte/s, so a tensor of N bytes takes N seconds to move).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "dplace/graph/families.h"
#include "dplace/io/load.h"
#include "dplace/place/meta/best_start.h"
#include "dplace/place/schedule/list_scheduler.h"
#include "dplace/place/search/chains.h"
#include "dplace/place/units.h"
#include "dplace/registry/registry.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

using sim::testing::IndependentChains;
using sim::testing::Make;
using sim::testing::ThreeDevices;
using sim::testing::TimedOp;

struct Placed {
  sim::Placement placement;
  sim::Evaluation evaluation;
  std::string note;
};

Placed PlaceBy(const std::string& name, const sim::Problem& p, int64_t max_evaluations = 0,
               const std::vector<std::string>& portfolio = {},
               const sim::Placement* start = nullptr) {
  const auto evaluator = sim::testing::EvaluatorOf(p);
  PlacerOptions options;
  for (const std::string& m : portfolio) {
    std::string& members = options["portfolio"]["members"];
    members += (members.empty() ? "" : ",") + m;
  }
  auto placer = MakePlacer(name, options);
  EXPECT_TRUE(placer.ok()) << placer.status().message();
  auto placed = placer->placer->Place(p, {.evaluator = evaluator.get(),
                                          .seed = 7,
                                          .limits = {.evaluations = max_evaluations},
                                          .start = start});
  EXPECT_TRUE(placed.ok()) << name << ": " << placed.status().message();
  const auto judge = sim::testing::EvaluatorOf(p);
  return {placed->placement, judge->Evaluate(placed->placement), placed->note};
}

TEST(ChainsTest, LongestPathFirstThenWhatIsLeft) {
  // a -> b -> c -> d (1 s each) and a -> e -> f (0.5 s each), 1-byte tensors (1 s over any link):
  // the longest path a..d (7 s with its transfers) is the first cluster, e -> f the second.
  graph::GraphBuilder b("fork");
  const auto a = b.AddOp(TimedOp("a", 1), {{1, -1}});
  const auto x = b.AddOp(TimedOp("b", 1), {{1, -1}});
  const auto c = b.AddOp(TimedOp("c", 1), {{1, -1}});
  const auto d = b.AddOp(TimedOp("d", 1));
  const auto e = b.AddOp(TimedOp("e", 0.5), {{1, -1}});
  const auto f = b.AddOp(TimedOp("f", 0.5));
  b.AddEdge(a, 0, x);
  b.AddEdge(x, 0, c);
  b.AddEdge(c, 0, d);
  b.AddEdge(a, 0, e);
  b.AddEdge(e, 0, f);
  EXPECT_EQ(LinearClusters(Make(b, ThreeDevices())).vector(), (std::vector<int>{0, 0, 0, 0, 1, 1}));
}

TEST(ChainsTest, TheRecurrentChainGetsADeviceOfItsOwn) {
  // An unrolled recurrence: h_t = f(h_{t-1}, x_t), every op 1 s, tensors of 0.01 bytes. On one
  // device the inputs x_t, ready at once, run first (8 s). With the chain x_0, h_0..h_3 (the
  // longest path) moved to a device of its own, the other inputs run beside it: about 5 s.
  graph::GraphBuilder b("recurrence");
  std::vector<graph::OpId> xs;
  for (int t = 0; t < 4; ++t)
    xs.push_back(b.AddOp(TimedOp("x" + std::to_string(t), 1), {{0.01, -1}}));
  graph::OpId h{-1};
  for (int t = 0; t < 4; ++t) {
    const graph::OpId next = b.AddOp(TimedOp("h" + std::to_string(t), 1), {{0.01, -1}});
    b.AddEdge(xs[static_cast<size_t>(t)], 0, next);
    if (h >= 0) b.AddEdge(h, 0, next);
    h = next;
  }
  const sim::Problem p = Make(b, ThreeDevices());
  EXPECT_NEAR(PlaceBy("single", p).evaluation.value, 8, 1e-9);
  const Placed r = PlaceBy("chains", p);
  EXPECT_LT(r.evaluation.value, 5.1);
  EXPECT_EQ(r.placement[sim::OpId(4)], r.placement[sim::OpId(7)])
      << "the chain h_0..h_3 shares a device";
  EXPECT_NE(r.placement[sim::OpId(1)], r.placement[sim::OpId(5)]) << "x_1 runs beside the chain";
}

TEST(ChainsTest, StartsWhereTheCallerSays) {
  // With a start and one evaluation, chains returns the start (one GPU: 8 s); on its own it
  // starts from the better of one device and contiguous runs, and moves a chain away (4 s).
  const sim::Problem p = IndependentChains(2);
  const sim::Placement one_gpu(8, sim::DeviceId(0));
  const Placed r = PlaceBy("chains", p, 1, {}, &one_gpu);
  EXPECT_EQ(r.placement, one_gpu);
  EXPECT_NE(r.note.find("from the given start"), std::string::npos) << r.note;
  EXPECT_NEAR(PlaceBy("chains", p).evaluation.value, 4, 1e-9);
}

// Members as the table makes them: their traits decide what TwoStarts does with them.
Member Made(const char* name) { return std::move(MakePlacer(name)).value(); }

TEST(ChainsTest, ItsOwnStartIsTheBetterOfSingleAndContiguousOnceBothAreOffered) {
  TwoStarts start(2);
  const sim::Placement one(3, sim::DeviceId(0)), other(3, sim::DeviceId(1)),
      third(3, sim::DeviceId(2));
  start.Offer(Made("contiguous"), other, Score{true, 2});
  EXPECT_EQ(start.own(), nullptr);
  start.Offer(Made("heft"), one, Score{true, 1});  // not a start of chains
  EXPECT_EQ(start.own(), nullptr);
  start.Offer(Made("single"), one, Score{true, 3});
  ASSERT_NE(start.own(), nullptr);
  EXPECT_EQ(*start.own(), other);
  ASSERT_NE(start.best(), nullptr);
  EXPECT_EQ(*start.best(), one) << "heft's placement, the best offered";
}

TEST(ChainsTest, NoSecondStartWhenTheBestHeuristicIsItsOwn) {
  TwoStarts start(2);
  const sim::Placement one(3, sim::DeviceId(0)), other(3, sim::DeviceId(1));
  start.Offer(Made("single"), one, Score{true, 3});
  start.Offer(Made("heft"), other, Score{true, 4});
  start.Offer(Made("contiguous"), other, Score{true, 2});
  ASSERT_NE(start.own(), nullptr);
  EXPECT_EQ(*start.own(), other);
  EXPECT_EQ(start.best(), nullptr);
}

TEST(McmcTest, NeverWorseThanItsStart) {
  // mcmc starts from the best heuristic and keeps the best placement it visits.
  const sim::Problem p = IndependentChains(2);
  const Placed start = PlaceBy("m_etf", p);
  const Placed r = PlaceBy("mcmc", p, 500);
  EXPECT_LE(r.evaluation.value, start.evaluation.value + 1e-12);
  EXPECT_NE(r.note.find("proposals"), std::string::npos) << r.note;
}

TEST(McmcTest, StartsWhereTheCallerSays) {
  // With a start and no evaluation to spare beyond judging it, mcmc and local_search return the
  // start itself (one GPU: 8 s), not the best heuristic (4 s).
  const sim::Problem p = IndependentChains(2);
  const sim::Placement one_gpu(8, sim::DeviceId(0));
  for (const char* name : {"mcmc", "local_search"}) {
    const Placed r = PlaceBy(name, p, 1, {}, &one_gpu);
    EXPECT_EQ(r.placement, one_gpu) << name;
  }
  EXPECT_NE(PlaceBy("mcmc", p, 1, {}, &one_gpu).note.find("from the given start"),
            std::string::npos);
  EXPECT_NEAR(PlaceBy("mcmc", p, 1).evaluation.value, 4, 1e-9);
}

TEST(McmcTest, ImprovesOnTheGivenStart) {
  // From one GPU (8 s), a few hundred proposals find the two chains a GPU each (4 s).
  const sim::Problem p = IndependentChains(2);
  const sim::Placement one_gpu(8, sim::DeviceId(0));
  EXPECT_NEAR(PlaceBy("mcmc", p, 400, {}, &one_gpu).evaluation.value, 4, 1e-9);
}

TEST(McmcTest, ItsResultCarriesTheImprovingMovesWhenAsked) {
  // From one GPU (8 s) to a GPU per chain (4 s): each kept improving move is one unit's change
  // (the scope and run moves of this graph's units aside, several) from a better-scored before to
  // after, the first from the start; not asked, none.
  const sim::Problem p = IndependentChains(2);
  const sim::Placement one_gpu(8, sim::DeviceId(0));
  const auto evaluator = sim::testing::EvaluatorOf(p);
  const auto mcmc = Made("mcmc").placer;
  auto asked = mcmc->Place(p, {.evaluator = evaluator.get(),
                               .seed = 3,
                               .limits = {.evaluations = 400},
                               .start = &one_gpu,
                               .record_improving = true});
  ASSERT_TRUE(asked.ok());
  ASSERT_FALSE(asked->improving.empty());
  EXPECT_EQ(asked->improving.front().before, one_gpu);
  for (const ImprovingMove& m : asked->improving) {
    EXPECT_NE(m.before, m.after);
    EXPECT_LT(evaluator->Evaluate(m.after).value, evaluator->Evaluate(m.before).value);
  }
  auto again = Made("mcmc").placer->Place(p, {.evaluator = evaluator.get(),
                                              .seed = 3,
                                              .limits = {.evaluations = 400},
                                              .start = &one_gpu,
                                              .record_improving = true});
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(again->improving.size(), asked->improving.size());
  for (size_t i = 0; i < asked->improving.size(); ++i) {
    EXPECT_EQ(again->improving[i].after, asked->improving[i].after);
  }
  auto not_asked = Made("mcmc").placer->Place(
      p,
      {.evaluator = evaluator.get(), .seed = 3, .limits = {.evaluations = 400}, .start = &one_gpu});
  ASSERT_TRUE(not_asked.ok());
  EXPECT_TRUE(not_asked->improving.empty());
}

TEST(McmcTest, UnderTheBanditControlItIsDeterministicAndImprovesOnItsStart) {
  const sim::Problem p = IndependentChains(4);
  const sim::Placement one_gpu(16, sim::DeviceId(0));
  auto place = [&](uint64_t seed) {
    const auto evaluator = sim::testing::EvaluatorOf(p);
    auto made = MakePlacer("mcmc", {{"mcmc", {{"control", "bandit"}}}});
    EXPECT_TRUE(made.ok());
    return made->placer
        ->Place(p, {.evaluator = evaluator.get(),
                    .seed = seed,
                    .limits = {.evaluations = 600},
                    .start = &one_gpu})
        .value();
  };
  const PlaceResult a = place(3), b = place(3);
  EXPECT_EQ(a.placement, b.placement);
  const auto evaluator = sim::testing::EvaluatorOf(p);
  EXPECT_LT(evaluator->Evaluate(a.placement).value, evaluator->Evaluate(one_gpu).value);
  EXPECT_FALSE(MakePlacer("mcmc", {{"mcmc", {{"control", "greedy"}}}}).ok());
  // The note gives the shares the bandit ended with (nine: six kinds, three temperatures); a prior
  // of nine shares starts it elsewhere; a prior that is not nine shares >= 0 is refused.
  EXPECT_NE(a.note.find("control shares "), std::string::npos) << a.note;
  const std::string shares = a.note.substr(a.note.find("control shares ") + 15);
  EXPECT_EQ(std::count(shares.begin(), shares.end(), ','), 8) << shares;
  EXPECT_TRUE(
      MakePlacer("mcmc",
                 {{"mcmc", {{"control", "bandit"}, {"control_prior", "1,0,0,1,0,0,0,1,0"}}}})
          .ok());
  for (const char* bad : {"1,2,3", "1,0,0,1,0,0,0,1,x", "1,0,0,1,0,0,0,1,-1", "0,0,0,0,0,0,1,1,1"})
    EXPECT_FALSE(MakePlacer("mcmc", {{"mcmc", {{"control_prior", bad}}}}).ok()) << bad;
}

TEST(McmcTest, GuidedByTheMoveScorerItIsDeterministicAndImprovesOnItsStart) {
  const sim::Problem p = IndependentChains(4);
  const sim::Placement one_gpu(16, sim::DeviceId(0));
  for (const char* guide : {"hand", "learned"}) {
    auto place = [&] {
      const auto evaluator = sim::testing::EvaluatorOf(p);
      auto made = MakePlacer("mcmc", {{"mcmc", {{"guide", guide}, {"guide_share", "0.5"}}}});
      EXPECT_TRUE(made.ok());
      return made->placer
          ->Place(p, {.evaluator = evaluator.get(),
                      .seed = 3,
                      .limits = {.evaluations = 600},
                      .start = &one_gpu})
          .value();
    };
    const PlaceResult a = place(), b = place();
    EXPECT_EQ(a.placement, b.placement) << guide;
    EXPECT_NE(a.note.find(" guided (" + std::string(guide)), std::string::npos) << a.note;
    const auto evaluator = sim::testing::EvaluatorOf(p);
    EXPECT_LT(evaluator->Evaluate(a.placement).value, evaluator->Evaluate(one_gpu).value);
  }
  EXPECT_FALSE(MakePlacer("mcmc", {{"mcmc", {{"guide", "gnn"}}}}).ok());
  // Learned from the bundled offline fit: the same placement twice; a missing model is an error.
  auto from_model = [&](const std::string& model) {
    const auto evaluator = sim::testing::EvaluatorOf(p);
    auto made = MakePlacer("mcmc", {{"mcmc", {{"guide", "learned"}, {"guide_model", model}}}});
    EXPECT_TRUE(made.ok());
    return made->placer->Place(p, {.evaluator = evaluator.get(),
                                   .seed = 3,
                                   .limits = {.evaluations = 600},
                                   .start = &one_gpu});
  };
  const std::string bundled = std::string(DPLACE_SOURCE_DIR) + "/models/move_scorer.txt";
  auto a = from_model(bundled), b = from_model(bundled);
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->placement, b->placement);
  // A missing model fails with the options, naming the file.
  const auto missing =
      MakePlacer("mcmc", {{"mcmc", {{"guide", "learned"}, {"guide_model", bundled + ".missing"}}}});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(std::string(missing.status().message()).find("move_scorer.txt.missing"),
            std::string::npos);
}

TEST(McmcTest, AWindowAsWideAsTheCriticalPathIsSolvedExactlyInOneReSolve) {
  // On one GPU the critical path runs through all eight ops of the two chains: one window of
  // eight units tries every one of their 3^8 assignments and keeps the best, the lower bound (4 s,
  // a chain a GPU) after a single Metropolis proposal.
  const sim::Problem p = IndependentChains(2);
  const sim::Placement one_gpu(8, sim::DeviceId(0));
  auto place = [&](const char* window) {
    const auto evaluator = sim::testing::EvaluatorOf(p);
    auto made = MakePlacer("mcmc", {{"mcmc",
                                     {{"window", window},
                                      {"window_every", "1"},
                                      {"window_evaluations", "6561"},
                                      {"chains", "1"}}}});
    EXPECT_TRUE(made.ok());
    return made->placer
        ->Place(p, {.evaluator = evaluator.get(),
                    .seed = 3,
                    .limits = {.evaluations = 6600},
                    .start = &one_gpu})
        .value();
  };
  const PlaceResult a = place("8");
  const auto evaluator = sim::testing::EvaluatorOf(p);
  EXPECT_NEAR(evaluator->Evaluate(a.placement).value, 4, 1e-9) << a.note;
  EXPECT_NE(a.note.find("1 windows re-solved, 1 improved"), std::string::npos) << a.note;
  EXPECT_EQ(place("8").placement, a.placement);
  EXPECT_FALSE(MakePlacer("mcmc", {{"mcmc", {{"window", "-1"}}}}).ok());
}

TEST(LocalSearchTest, GuidedByTheMoveScorerItIsDeterministicAndImprovesOnItsStart) {
  const sim::Problem p = IndependentChains(4);
  const sim::Placement one_gpu(16, sim::DeviceId(0));
  const std::string bundled = std::string(DPLACE_SOURCE_DIR) + "/models/move_scorer.txt";
  for (const std::string guide : {"hand", "learned"}) {
    auto place = [&](const std::string& model) {
      const auto evaluator = sim::testing::EvaluatorOf(p);
      auto made = MakePlacer("local_search",
                             {{"local_search", {{"guide", guide}, {"guide_model", model}}}});
      EXPECT_TRUE(made.ok());
      return made->placer->Place(p, {.evaluator = evaluator.get(),
                                     .seed = 3,
                                     .limits = {.evaluations = 300},
                                     .start = &one_gpu});
    };
    auto a = place(bundled), b = place(bundled);
    ASSERT_TRUE(a.ok()) << a.status().message();
    EXPECT_EQ(a->placement, b->placement) << guide;
    const auto evaluator = sim::testing::EvaluatorOf(p);
    EXPECT_LT(evaluator->Evaluate(a->placement).value, evaluator->Evaluate(one_gpu).value);
    if (guide == "learned") {
      const auto missing = MakePlacer(
          "local_search", {{"local_search", {{"guide", guide}, {"guide_model", bundled + ".x"}}}});
      ASSERT_FALSE(missing.ok());
      EXPECT_NE(std::string(missing.status().message()).find("local_search.guide_model"),
                std::string::npos);
    }
  }
  EXPECT_FALSE(MakePlacer("local_search", {{"local_search", {{"guide", "gnn"}}}}).ok());
}

TEST(McmcTest, TwoChainsShareTheEvaluationBudget) {
  // The second chain evaluates on an evaluator of its own; its evaluations count against the
  // caller's budget and come back to the caller's evaluator (about 150 each, not 300 each). Four
  // chains of ops on three devices: the lower bound (work over devices) is out of reach, so the
  // search spends its budget.
  const sim::Problem p = IndependentChains(4);
  const sim::Placement one_gpu(16, sim::DeviceId(0));
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto placed = Made("mcmc").placer->Place(
      p,
      {.evaluator = evaluator.get(), .seed = 3, .limits = {.evaluations = 300}, .start = &one_gpu});
  ASSERT_TRUE(placed.ok());
  EXPECT_GE(evaluator->evaluations(), 300);
  EXPECT_LE(evaluator->evaluations(), 310);
  EXPECT_EQ(placed->stats.evaluations, evaluator->evaluations());
  EXPECT_NE(placed->note.find("2 chains"), std::string::npos) << placed->note;
}

TEST(SearchTest, TheStartStaysWithinTheEvaluationLimit) {
  // Without a start the searches begin from the best of the start heuristics and of chains;
  // contiguous alone refines its cuts with up to 1,000 evaluations. Under a limit of 64 the start
  // takes at most a quarter (beyond it only contiguous's first cuts), and the whole placement
  // stays within the limit.
  auto g = std::make_shared<const graph::Graph>(graph::GenerateGraph("enas_rnn", 3, 0).value());
  const sim::Problem p = sim::MakeProblem(g, io::LoadCluster("k80x4").value(),
                                          sim::Objective::kStep, cost::RooflineCostModel())
                             .value();
  for (const char* name : {"mcmc", "local_search", "contiguous"}) {
    const auto evaluator = sim::testing::EvaluatorOf(p);
    auto placed = Made(name).placer->Place(
        p, {.evaluator = evaluator.get(), .seed = 3, .limits = {.evaluations = 64}});
    ASSERT_TRUE(placed.ok());
    EXPECT_LE(evaluator->evaluations(), 64 + 8) << name;
  }
}

#ifdef DPLACE_HAVE_TORCH
TEST(SearchTest, APolicysPlacementJoinsTheStarts) {
  // `mcmc.start=placeto`: the searches' start with placeto's placement among the candidates is
  // never worse than either alone (no limits: each runs to its own budget, deterministically).
  auto g = std::make_shared<const graph::Graph>(graph::GenerateGraph("enas_cnn", 3, 1).value());
  const sim::Problem p = sim::MakeProblem(g, io::LoadCluster("k80x4").value(),
                                          sim::Objective::kStep, cost::RooflineCostModel())
                             .value();
  auto find = [&](const std::vector<std::string>& also) {
    const auto evaluator = sim::testing::EvaluatorOf(p);
    return SearchStart(also).value()->Find(p, {.evaluator = evaluator.get(), .seed = 5});
  };
  const Start with = find({"placeto"});
  const Start without = find({});
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto alone = Made("placeto").placer->Place(p, {.evaluator = evaluator.get(), .seed = 5});
  ASSERT_TRUE(alone.ok()) << alone.status().message();
  EXPECT_FALSE(without.score < with.score);
  EXPECT_FALSE(ScoreOf(evaluator->Evaluate(alone->placement)) < with.score);
  ASSERT_FALSE(SearchStart({"no_such_placer"}).ok());
}
#endif

TEST(SearchTest, StopsAtTheLowerBound) {
  // Two chains on two GPUs (4 s) is the lower bound, the longest chain: once there, mcmc and
  // local_search stop short of their 100,000 evaluations, and the portfolio runs no member after
  // the one that got there.
  const sim::Problem p = IndependentChains(2);
  ASSERT_NEAR(p.LowerBound(), 4, 1e-9);
  const sim::Placement one_gpu(8, sim::DeviceId(0));
  for (const char* name : {"mcmc", "local_search"}) {
    const auto evaluator = sim::testing::EvaluatorOf(p);
    auto placed = Made(name).placer->Place(p, {.evaluator = evaluator.get(),
                                               .seed = 3,
                                               .limits = {.evaluations = 100000},
                                               .start = &one_gpu});
    ASSERT_TRUE(placed.ok());
    EXPECT_NEAR(evaluator->Evaluate(placed->placement).value, 4, 1e-9) << name;
    EXPECT_LT(evaluator->evaluations(), 10000) << name;
  }
  EXPECT_NE(PlaceBy("mcmc", p, 100000, {}, &one_gpu).note.find("at the lower bound"),
            std::string::npos);
  const Placed r = PlaceBy("portfolio", p, 100000, {"single", "heft", "mcmc"});
  EXPECT_NE(r.note.find("best of 3: heft, 0.0% gap to the lower bound (the members after it did "
                        "not run)"),
            std::string::npos)
      << r.note;
}

TEST(ScopeGroupsTest, ModulesAndEveryCallOfAModule) {
  // An unrolled two-layer RNN's names: "cells.0_1" is the second call of module "cells.0".
  graph::GraphBuilder b("rnn");
  for (const char* name : {"/cells.0/Gemm", "/cells.0/Tanh", "/cells.1/Gemm", "/cells.0_1/Gemm",
                           "/cells.0_1/Tanh", "/cells.1_1/Gemm", "/proj/Gemm", "/Constant"}) {
    b.AddOp(TimedOp(name, 1));
  }
  const sim::Problem p = Make(b, ThreeDevices());
  const Units units = MakeUnits(p);
  const ScopeGroups groups = MakeScopeGroups(p, units);
  std::set<std::vector<std::string>> named;
  for (const auto& members : groups.members) {
    std::vector<std::string> names;
    for (UnitId u : members) names.push_back(p.g().op(units[u].ops[0]).name);
    named.insert(names);
  }
  // One call of cells.0 (twice: the first call has no suffix), every call of cells.0, every call
  // of cells.1; single ops (proj, the constant) and the set of every unit are not groups.
  const std::set<std::vector<std::string>> expected = {
      {"/cells.0/Gemm", "/cells.0/Tanh"},
      {"/cells.0_1/Gemm", "/cells.0_1/Tanh"},
      {"/cells.0/Gemm", "/cells.0/Tanh", "/cells.0_1/Gemm", "/cells.0_1/Tanh"},
      {"/cells.1/Gemm", "/cells.1_1/Gemm"}};
  EXPECT_EQ(named, expected);
  ASSERT_EQ(groups.of_unit.size(), units.size());
  for (ScopeGroupId g : groups.members.ids()) {
    for (UnitId u : groups.members[g]) {
      const auto& of = groups.of_unit[u];
      EXPECT_NE(std::find(of.begin(), of.end(), g), of.end());
    }
  }
}

TEST(PortfolioTest, ReturnsTheBestMemberWithItsGap) {
  const sim::Problem p = IndependentChains(2);
  const Placed r = PlaceBy("portfolio", p, 0, {"single", "round_robin", "heft"});
  EXPECT_NEAR(r.evaluation.value, 4, 1e-9);
  EXPECT_NE(r.note.find("best of 3: heft"), std::string::npos) << r.note;
  EXPECT_NE(r.note.find("gap to the lower bound"), std::string::npos) << r.note;
}

}  // namespace
}  // namespace dplace::place
