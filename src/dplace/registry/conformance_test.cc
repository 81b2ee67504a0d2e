// The conformance suite: every registered placer, on the same small problems, must return a
// complete placement that respects device kinds and co-location, a feasible one where one exists,
// and the same placement for the same seed.
#include <gtest/gtest.h>

#include "dplace/graph/graph_builder.h"
#include "dplace/io/load.h"
#include "dplace/place/baseline/baseline.h"
#include "dplace/registry/registry.h"
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

// Options that keep solver-based and learned placers quick and reproducible: a node limit for
// those that have one, a narrow policy for those trained in the request (read from the placer's
// own option list, not its name).
PlacerOptions QuickOptions(const PlacerEntry& entry) {
  PlacerOptions options;
  for (const OptionDoc& d : OptionDocs(entry)) {
    if (d.key == "max_nodes") options[std::string(entry.name)]["max_nodes"] = "300";
    if (d.key == "hidden") options[std::string(entry.name)]["hidden"] = "16";
  }
  return options;
}

Outcome PlaceWith(const PlacerEntry& entry, const sim::Problem& p, uint64_t seed) {
  const auto evaluator = sim::testing::EvaluatorOf(p);
  // An evaluation budget keeps the searches quick and reproducible; the time limit is only a
  // safety net. Placers that take a start get the round-robin placement.
  PlaceRequest request{
      .evaluator = evaluator.get(), .seed = seed, .limits = {.evaluations = 300, .seconds = 30}};
  sim::Placement start;
  if (entry.traits.takes_start) {
    start = MakePlacer("round_robin")->placer->Place(p, request)->placement;
    request.start = &start;
  }
  auto member = MakePlacer(entry.name, QuickOptions(entry));
  EXPECT_TRUE(member.ok()) << entry.name << ": " << member.status().message();
  if (!member.ok()) return {};
  EXPECT_EQ(member->name, entry.name);
  auto placed = member->placer->Place(p, request);
  EXPECT_TRUE(placed.ok()) << entry.name << ": " << placed.status().message();
  if (!placed.ok()) return {};
  EXPECT_LE(placed->stats.evaluations, evaluator->evaluations());
  EXPECT_GE(placed->stats.seconds, 0);
  return {placed->placement, evaluator->Evaluate(placed->placement)};
}

class ConformanceTest : public ::testing::TestWithParam<PlacerEntry> {};

TEST_P(ConformanceTest, CompleteAndRespectsKindsAndColocation) {
  for (const sim::Problem& p :
       {LayeredProblem(hw::kUnlimited, sim::Objective::kStep),
        LayeredProblem(hw::kUnlimited, sim::Objective::kThroughput), PaperProblem()}) {
    if (!GetParam().traits.Supports(p.objective)) continue;
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
  if (GetParam().traits.framework_rule) {
    // Its contract is the framework's rule, not memory; the evaluation judges it all the same.
    EXPECT_TRUE(r.evaluation.feasible || !r.evaluation.reason.empty());
    return;
  }
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
  sim::Problem p = LayeredProblem(hw::kUnlimited, GetParam().traits.Supports(sim::Objective::kStep)
                                                      ? sim::Objective::kStep
                                                      : sim::Objective::kThroughput);
  for (uint64_t seed : {1u, 42u}) {
    EXPECT_EQ(PlaceWith(GetParam(), p, seed).placement, PlaceWith(GetParam(), p, seed).placement)
        << GetParam().name;
  }
}

INSTANTIATE_TEST_SUITE_P(AllPlacers, ConformanceTest,
                         ::testing::ValuesIn(Placers().begin(), Placers().end()),
                         [](const auto& test) { return std::string(test.param.name); });

// Every option a placer lists parses from its own default, and a key it does not have is one
// clear error naming the placer, the key and the keys it has.
TEST_P(ConformanceTest, OptionsParseAndUnknownKeysFail) {
  const std::string name(GetParam().name);
  for (const OptionDoc& d : OptionDocs(GetParam())) {
    if (d.default_value == "(none)") continue;
    auto made = MakePlacer(name, {{name, {{d.key, d.default_value}}}});
    EXPECT_TRUE(made.ok()) << name << "." << d.key << ": " << made.status().message();
    auto bad = MakePlacer(name, {{name, {{d.key, "not-a-value"}}}});
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput) << name << "." << d.key;
  }
  auto unknown = MakePlacer(name, {{name, {{"no_such_option", "1"}}}});
  ASSERT_FALSE(unknown.ok()) << name;
  EXPECT_EQ(unknown.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(unknown.status().message().find("option " + name + ".no_such_option"),
            std::string::npos)
      << unknown.status().message();
  EXPECT_EQ(unknown.status().message().find('\n'), std::string::npos);
}

TEST(RegistryTest, OptionsReachTheMembersOfMetaPlacers) {
  // mcmc's option inside the portfolio: a bad value fails when the portfolio is made.
  auto bad = MakePlacer("portfolio",
                        {{"portfolio", {{"members", "single,mcmc"}}}, {"mcmc", {{"chains", "0"}}}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("option mcmc.chains: '0' is not an integer from 1"),
            std::string::npos)
      << bad.status().message();
  auto typo = MakePlacer("mcmc", {{"mcmc", {{"chain", "4"}}}});
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("did you mean 'chains'"), std::string::npos)
      << typo.status().message();
  auto no_placer = MakePlacer("mcmc", {{"mcmcc", {{"chains", "4"}}}});
  ASSERT_FALSE(no_placer.ok());
  EXPECT_NE(no_placer.status().message().find("unknown placer 'mcmcc'"), std::string::npos)
      << no_placer.status().message();
}

TEST(RegistryTest, TraitsNotNamesDecide) {
  for (const PlacerEntry& e : Placers()) {
    // The exact placers solve the paper's model only; every other placer places for every
    // objective.
    EXPECT_EQ(e.traits.Supports(sim::Objective::kStep), e.traits.family != Family::kExact)
        << e.name;
    if (e.traits.family == Family::kSearch) {
      EXPECT_TRUE(e.traits.takes_start) << e.name;
      EXPECT_GT(e.traits.portfolio_weight, 0) << e.name;
    }
  }
}

// A placer option that makes a placer its own start or member, directly or through another, is
// one clear error, not a recursion without end.
TEST(RegistryTest, OptionsThatMakeAPlacerItsOwnStartOrMemberAreRefused) {
  struct Case {
    std::string placer;
    PlacerOptions options;
    std::string chain;
  };
  const std::vector<Case> cases = {
      {"mcmc", {{"mcmc", {{"start", "mcmc"}}}}, "(mcmc -> mcmc)"},
      {"portfolio", {{"portfolio", {{"members", "portfolio"}}}}, "(portfolio -> portfolio)"},
      {"mcmc",
       {{"mcmc", {{"start", "local_search"}}}, {"local_search", {{"start", "mcmc"}}}},
       "(mcmc -> local_search -> mcmc)"},
  };
  for (const Case& c : cases) {
    auto made = MakePlacer(c.placer, c.options);
    ASSERT_FALSE(made.ok()) << c.placer;
    EXPECT_EQ(made.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(made.status().message().find("its own start or member " + c.chain), std::string::npos)
        << made.status().message();
  }
  // A placer started from another is no cycle.
  EXPECT_TRUE(MakePlacer("mcmc", {{"mcmc", {{"start", "local_search"}}}}).ok());
}

TEST(RegistryTest, UnknownNameListsTheKnownOnes) {
  auto p = MakePlacer("magic");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.status().message().find("known: single, round_robin"), std::string::npos);
}

TEST(SinglePlacerTest, PicksTheFastestDeviceThatFits) {
  // On the paper's machine the best single device is an accelerator (the CPU is 10x slower).
  sim::Problem p = PaperProblem();
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto placed = MakeSinglePlacer()->Place(p, {.evaluator = evaluator.get()});
  ASSERT_TRUE(placed.ok());
  EXPECT_EQ(p.c().device(placed->placement[sim::OpId(0)]).kind, "accel");
  EXPECT_EQ(evaluator->evaluations(), p.num_devices());
  EXPECT_EQ(placed->stats.evaluations, p.num_devices());
}

}  // namespace
}  // namespace dplace::place
