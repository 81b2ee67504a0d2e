// The run service: a placer made from the table with its options, placed and judged; the lower
// bound raised by a placer's proof; large graphs coarsened except for the exact placers.
#include "dplace/run/run.h"

#include <gtest/gtest.h>

#include <atomic>
#include <limits>

#include "dplace/graph/synthetic.h"
#include "dplace/io/load.h"
#include "dplace/registry/registry.h"
#include "dplace/run/load.h"
#include "dplace/sim/objectives.h"
#include "dplace/sim/pipeline_sim.h"

namespace dplace::run {
namespace {

const std::string kRoot = DPLACE_SOURCE_DIR;

std::shared_ptr<const sim::Problem> Paper(const std::string& workload) {
  auto lp = LoadProblem(
      {.graph = {.path = kRoot + "/testdata/dnn-partitioning/throughput-inputs/" + workload}});
  EXPECT_TRUE(lp.ok()) << lp.status().message();
  return lp->problem;
}

TEST(RunTest, PlacesJudgesAndRecordsTheOptions) {
  const auto problem = Paper("LayerGraphs/bert24_training.json");
  auto r = run::Run(problem, {.placer = "mcmc",
                              .options = {{"mcmc", {{"chains", "3"}}}},
                              .seed = 4,
                              .limits = {.evaluations = 500}});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->placer, "mcmc");
  EXPECT_NE(r->note.find("3 chains"), std::string::npos) << r->note;
  EXPECT_EQ(r->options, std::vector<std::string>{"mcmc.chains=3"});
  EXPECT_TRUE(r->evaluation.feasible);
  EXPECT_GT(r->evaluations, 0);
  // The judgement is a fresh evaluation of the returned placement.
  EXPECT_EQ(sim::MakeEvaluator(problem)->Evaluate(r->placement).value, r->evaluation.value);
  // Same seed, same placement.
  auto again = run::Run(problem, {.placer = "mcmc",
                                  .options = {{"mcmc", {{"chains", "3"}}}},
                                  .seed = 4,
                                  .limits = {.evaluations = 500}});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->placement, r->placement);
}

TEST(RunTest, AMeasuredSearchSearchesByTheMeasureAndMeasuresItsResult) {
  // A fake measure that prefers every op on the last GPU: 1 s plus 1 s per op elsewhere, which
  // the simulation (and its lower bound) knows nothing of.
  auto g = std::make_shared<const graph::Graph>(
      graph::MakeLayeredGraph({.num_ops = 60, .width = 4, .seed = 2}));
  const auto problem = std::make_shared<const sim::Problem>(
      std::move(sim::MakeProblem(g, *io::LoadCluster("k80x4"), sim::Objective::kStep,
                                 cost::RooflineCostModel()))
          .value());
  const sim::DeviceId last(problem->num_devices() - 2);  // the last GPU (the CPU is last)
  std::atomic<int> calls = 0;
  auto measure = std::make_shared<const sim::Measurer>(
      [&calls, last](const sim::Placement& p) -> StatusOr<double> {
        ++calls;
        double s = 1;
        for (sim::DeviceId d : p) s += d != last ? 1 : 0;
        return s;
      });
  const RunRequest request = {
      .placer = "mcmc", .seed = 3, .limits = {.evaluations = 3000}, .measure = measure};
  auto r = run::Run(problem, request);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->measured_s.has_value());
  EXPECT_EQ(*r->measured_s, 1);          // every op moved to the last GPU: the measure's optimum
  EXPECT_LE(r->evaluations, 3000 + 8);   // as searches keep budgets: a chain's last move over
  EXPECT_GE(calls, r->evaluations / 2);  // the search's evaluations were measurements
  // Same seed, same placement.
  auto again = run::Run(problem, request);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->placement, r->placement);
  // A measure that fails fails the run with its message; with the robust search it is refused.
  auto failing = std::make_shared<const sim::Measurer>(
      [](const sim::Placement&) -> StatusOr<double> { return InvalidInput("measure: no GPU"); });
  auto bad =
      run::Run(problem, {.placer = "mcmc", .limits = {.evaluations = 20}, .measure = failing});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(std::string(bad.status().message()).find("measure: no GPU"), std::string::npos);
  auto both = run::Run(
      problem,
      {.placer = "mcmc", .robust = {.count = 2}, .optimise_robust = true, .measure = measure});
  ASSERT_FALSE(both.ok());
  EXPECT_NE(std::string(both.status().message()).find("measure"), std::string::npos);
}

TEST(RunTest, AProvenBoundRaisesTheRunsBound) {
  const auto problem = Paper("LayerGraphs/bert24_inference.json");
  auto ilp = run::Run(problem, {.placer = "ilp", .options = {{"ilp", {{"max_nodes", "300"}}}}});
  auto single = run::Run(problem, {.placer = "single"});
  ASSERT_TRUE(ilp.ok() && single.ok());
  EXPECT_GT(ilp->proven_bound, problem->LowerBound());
  EXPECT_EQ(single->proven_bound, 0);
  EXPECT_EQ(LowerBound(*problem, {*single}), problem->LowerBound());
  EXPECT_EQ(LowerBound(*problem, {*single, *ilp}), ilp->proven_bound);
}

TEST(RunTest, ValidateMakesEachPlacerOnceAndRefusesBadRequestsByField) {
  auto valid = Validate({.options = {{"mcmc", {{"start_temperature", "0.5"}}}}}, {"mcmc", "heft"});
  ASSERT_TRUE(valid.ok()) << valid.status().message();
  place::Member first = valid->Take(0);
  ASSERT_NE(first.placer, nullptr);
  EXPECT_EQ(first.name, "mcmc");
  EXPECT_NE(valid->Take(0).placer, nullptr);  // taken again: made anew
  const std::vector<std::pair<RunRequest, std::string>> bad = {
      {{.limits = {.seconds = -1}}, "time_limit: "},
      {{.limits = {.evaluations = -1}}, "evaluations: "},
      {{.coarsen_ops = -1}, "coarsen: "},
      {{.options = {{"mcmc", {{"nope", "1"}}}}}, "options: "},
      {{.robust = {.count = 2, .quantile = 2}}, "robust"}};
  for (const auto& [request, field] : bad) {
    auto v = Validate(request, {"mcmc"});
    ASSERT_FALSE(v.ok()) << field;
    EXPECT_EQ(v.status().code(), StatusCode::kInvalidInput);
    EXPECT_TRUE(v.status().message().starts_with(field)) << v.status().message();
  }
  EXPECT_TRUE(Validate({}, {"nope"}).status().message().starts_with("placer: unknown placer"));
  EXPECT_TRUE(Validate({}, {"mcmc"}, -1).status().message().starts_with("total_time_limit: "));
  EXPECT_FALSE(Validate({}, {}).ok());
}

// A bound is sound: on every objective, what any placer claims (its proof, or the problem's own
// lower bound) is at most the value of every feasible plan any placer finds.
TEST(RunTest, EveryClaimedBoundIsAtMostEveryFeasibleValue) {
  for (const std::string workload :
       {"LayerGraphs/bert24_training.json", "LayerGraphs/resnet50_training.json"}) {
    for (const sim::ObjectiveRow& objective : sim::ObjectiveTable()) {
      auto lp = LoadProblem(
          {.graph = {.path = kRoot + "/testdata/dnn-partitioning/throughput-inputs/" + workload},
           .objective = std::string(objective.name)});
      ASSERT_TRUE(lp.ok()) << lp.status().message();
      std::vector<PlacerResult> results;
      for (const place::PlacerEntry& entry : place::Placers()) {
        if (!entry.traits.Supports(objective.id) ||
            entry.traits.family == place::Family::kLearned) {
          continue;
        }
        auto r = run::Run(lp->problem, {.placer = std::string(entry.name),
                                        .options = {{"ilp", {{"max_nodes", "300"}}}},
                                        .limits = {.evaluations = 2000, .seconds = 0.5}});
        if (!r.ok()) continue;
        // ilp's max-load program proves a bound of the max-load objective only (its latency
        // program, of latency): under the step and pipeline objectives it claims none beyond the
        // problem's own.
        if (entry.name == "ilp" &&
            (objective.id == sim::Objective::kStep || objective.id == sim::Objective::kPipeline)) {
          EXPECT_EQ(r->proven_bound, 0) << workload << " " << objective.name;
        }
        results.push_back(*std::move(r));
      }
      ASSERT_GT(results.size(), 3u);
      double bound = lp->problem->LowerBound(), best = std::numeric_limits<double>::infinity();
      std::string claimed_by = "the problem", best_by;
      for (const PlacerResult& r : results) {
        if (r.proven_bound > bound) {
          bound = r.proven_bound;
          claimed_by = r.placer;
        }
        if (r.evaluation.feasible && r.evaluation.value < best) {
          best = r.evaluation.value;
          best_by = r.placer;
        }
      }
      EXPECT_LE(bound, best * (1 + 1e-9))
          << workload << " " << objective.name << ": " << claimed_by << " claims " << bound << ", "
          << best_by << " finds " << best;
    }
  }
}

TEST(RunTest, UnknownPlacersAndOptionsAreInputErrors) {
  const auto problem = Paper("LayerGraphs/bert24_training.json");
  EXPECT_EQ(run::Run(problem, {.placer = "nope"}).status().code(), StatusCode::kInvalidInput);
  auto bad = run::Run(problem, {.placer = "dp", .options = {{"dp", {{"depth", "2"}}}}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(bad.status().message().find("dp has no option 'depth' (it has none)"),
            std::string::npos)
      << bad.status().message();
}

TEST(RunTest, ExactPlacersAreNotCoarsened) {
  // 64 ops with coarsening from 10: the one-shot placer goes through the coarse graph, dp does not.
  const auto problem = Paper("LayerGraphs/bert24_training.json");
  auto heft = run::Run(problem, {.placer = "heft", .coarsen_ops = 10});
  auto dp = run::Run(problem, {.placer = "dp", .coarsen_ops = 10});
  ASSERT_TRUE(heft.ok() && dp.ok());
  EXPECT_EQ(heft->note.rfind("coarsened", 0), 0u) << heft->note;
  EXPECT_EQ(dp->note, "optimal contiguous split (30 ideals)");
}

TEST(RunTest, AnInterleavedScheduleIsPlannedAsChunksThatGoRoundTheDevices) {
  auto load = [](const std::string& schedule) {
    auto lp = LoadProblem(
        {.graph = {.path = kRoot + "/models/bert_encoder.onnx", .training = true, .pipeline = true},
         .cluster = "a100x8",
         .stages = 2,
         .objective = "pipeline",
         .schedule = schedule});
    EXPECT_TRUE(lp.ok()) << lp.status().message();
    return lp->problem;
  };
  const auto plain = load("1f1b:8"), chunked = load("interleaved:2:8"), chosen = load("auto:8");
  EXPECT_EQ(chunked->virtual_stages, 2);
  auto one = run::Run(plain, {.placer = "dp"});
  auto two = run::Run(chunked, {.placer = "dp"});
  auto best = run::Run(chosen, {.placer = "dp"});
  ASSERT_TRUE(one.ok() && two.ok() && best.ok()) << two.status().message();
  // The plan is of the problem's two devices, in four chunks round them; judged as they run it,
  // with no bound (dp's proof is of the chunks).
  for (sim::DeviceId d : two->placement) EXPECT_LT(d.index(), 2u);
  auto run = sim::SimulateProblemPipeline(*chunked, two->placement);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_EQ(run->virtual_stages, 2);
  EXPECT_DOUBLE_EQ(two->evaluation.value, run->time_per_microbatch_s);
  EXPECT_EQ(two->proven_bound, 0);
  EXPECT_NE(two->note.find("for its chunks"), std::string::npos) << two->note;
  // auto plans both and keeps the faster: no slower than either.
  EXPECT_TRUE(best->evaluation.feasible);
  EXPECT_LE(best->evaluation.value, std::min(one->evaluation.value, two->evaluation.value));
}

TEST(RunTest, StagesAndDevicesRestrictTheCluster) {
  auto a100 = io::LoadCluster("a100x8");
  ASSERT_TRUE(a100.ok());
  auto names = [](const hw::Cluster& c) {
    std::string out;
    for (const hw::Device& d : c.devices()) out += (out.empty() ? "" : ",") + d.name;
    return out;
  };
  auto four = RestrictCluster(*a100, {}, 4);
  ASSERT_TRUE(four.ok()) << four.status().message();
  EXPECT_EQ(names(**four), "gpu0,gpu1,gpu2,gpu3");
  auto picked = RestrictCluster(*a100, {"gpu5", "cpu0", "gpu2"}, 0);
  ASSERT_TRUE(picked.ok());
  EXPECT_EQ(names(**picked), "gpu5,cpu0,gpu2");
  EXPECT_EQ((*picked)->LinkBetween(hw::DeviceId(0), hw::DeviceId(2)).bandwidth_bytes_per_s,
            (*a100)->LinkBetween(hw::DeviceId(5), hw::DeviceId(2)).bandwidth_bytes_per_s);
  EXPECT_EQ((*picked)->kinds(), (std::vector<std::string>{"gpu", "cpu"}));
  auto two_of_picked = RestrictCluster(*a100, {"gpu5", "cpu0", "gpu2"}, 2);
  ASSERT_TRUE(two_of_picked.ok());
  EXPECT_EQ(names(**two_of_picked), "gpu5,gpu2");
  // Bad input names the field (the CLI, its flag) and what is wrong.
  EXPECT_NE(RestrictCluster(*a100, {}, 9).status().message().find("stages: 9 stages need 9"),
            std::string::npos);
  EXPECT_NE(RestrictCluster(*a100, {"gpu9"}, 0).status().message().find("no device 'gpu9'"),
            std::string::npos);
  EXPECT_NE(RestrictCluster(*a100, {"gpu1", "gpu1"}, 0).status().message().find("twice"),
            std::string::npos);
  EXPECT_FALSE(RestrictCluster(*a100, {}, -1).ok());
  // Through LoadProblem, as --stages does.
  auto lp = LoadProblem(
      {.graph = {.path = kRoot + "/models/resnet50.onnx"}, .cluster = "a100x8", .stages = 2});
  ASSERT_TRUE(lp.ok()) << lp.status().message();
  EXPECT_EQ(lp->problem->num_devices(), 2);
}

}  // namespace
}  // namespace dplace::run
