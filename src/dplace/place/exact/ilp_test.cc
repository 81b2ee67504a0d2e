// The integer programs (`ilp`, `ilp_contiguous`) against independent answers: brute force over
// every placement of a small graph for the non-contiguous max-load and latency programs, `dp` for
// the contiguous program on the paper's workloads; and their warm starts and bounds on real inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "dplace/io/load.h"
#include "dplace/place/baseline/baseline.h"
#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/exact/ideal_lattice.h"
#include "dplace/place/exact/ilp_programs.h"
#include "dplace/sim/latency.h"
#include "dplace/sim/max_load.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

using sim::testing::TimedOp;

// Seven ops over two GPUs of 100 bytes and a CPU: a fork, a join and a side branch, with
// transfers of 1-3 s and GPU/CPU time ratios that differ per op, so that neither one device nor
// an even spread is best.
sim::Problem SmallProblem(sim::Objective objective) {
  graph::GraphBuilder b("small");
  auto op = [&](const char* name, double gpu_s, double cpu_s, double bytes, double out) {
    graph::Op o = TimedOp(name, gpu_s, cpu_s);
    o.param_bytes = bytes;
    return b.AddOp(o, {{0, out}});
  };
  const auto in = op("in", 1, 2, 10, 2);
  const auto l = op("left", 4, 30, 60, 1);
  const auto r = op("right", 5, 12, 50, 3);
  const auto s = op("side", 2, 3, 10, 1);
  const auto j = op("join", 3, 25, 30, 2);
  const auto t = op("tail", 2, 9, 20, 1);
  const auto o = op("out", 1, 1, 10, 0);
  b.AddEdge(in, 0, l);
  b.AddEdge(in, 0, r);
  b.AddEdge(in, 0, s);
  b.AddEdge(l, 0, j);
  b.AddEdge(r, 0, j);
  b.AddEdge(j, 0, t);
  b.AddEdge(s, 0, o);
  b.AddEdge(t, 0, o);
  return sim::testing::Make(b, sim::testing::ThreeDevices(100), objective);
}

// Best feasible value over all 3^7 placements.
double BruteForce(const sim::Problem& p) {
  const auto evaluator = sim::testing::EvaluatorOf(p);
  double best = std::numeric_limits<double>::infinity();
  sim::Placement placement(static_cast<size_t>(p.num_ops()), sim::DeviceId(0));
  for (int code = 0; code < 2187; ++code) {
    for (int i = 0, c = code; i < p.num_ops(); ++i, c /= 3)
      placement[sim::OpId(i)] = sim::DeviceId(c % 3);
    const sim::Evaluation e = evaluator->Evaluate(placement);
    if (e.feasible) best = std::min(best, e.value);
  }
  return best;
}

struct Solved {
  sim::Evaluation evaluation;
  std::string note;
  double lower_bound;
};

Solved PlaceWith(Placer& placer, const sim::Problem& p) {
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto placed = placer.Place(p, {.evaluator = evaluator.get(), .limits = {.seconds = 60}});
  EXPECT_TRUE(placed.ok()) << placed.status().message();
  if (!placed.ok()) return {};
  return {evaluator->Evaluate(placed->placement), placed->note, placed->proven_bound};
}

TEST(IlpTest, NonContiguousMaxLoadEqualsBruteForce) {
  const sim::Problem p = SmallProblem(sim::Objective::kThroughput);
  const Solved s = PlaceWith(*MakeIlpPlacer(), p);
  EXPECT_TRUE(s.evaluation.feasible) << s.evaluation.reason;
  EXPECT_NEAR(s.evaluation.value, BruteForce(p), 1e-9);
  EXPECT_EQ(s.note.rfind("optimal non-contiguous split", 0), 0u) << s.note;
  EXPECT_NEAR(s.lower_bound, s.evaluation.value, 1e-6);
}

TEST(IlpTest, LatencyEqualsBruteForce) {
  const sim::Problem p = SmallProblem(sim::Objective::kLatency);
  const double best = BruteForce(p);
  const Solved s = PlaceWith(*MakeIlpPlacer(), p);
  EXPECT_TRUE(s.evaluation.feasible) << s.evaluation.reason;
  EXPECT_NEAR(s.evaluation.value, best, 1e-6);
  EXPECT_EQ(s.note.rfind("optimal single-sample latency split", 0), 0u) << s.note;
  EXPECT_NEAR(s.lower_bound, best, 1e-6);
}

TEST(IlpTest, ContiguousEqualsDpOnASmallGraph) {
  const sim::Problem p = SmallProblem(sim::Objective::kThroughput);
  const Solved ilp = PlaceWith(*MakeIlpContiguousPlacer(), p);
  const Solved dp = PlaceWith(*MakeDpPlacer(), p);
  EXPECT_NEAR(ilp.evaluation.value, dp.evaluation.value, 1e-9);
  EXPECT_EQ(ilp.note.rfind("optimal contiguous split", 0), 0u) << ilp.note;
}

// UniformStages (f 1 s, b 2 s, 4 bytes of weight gradients each, transfers free, links of 1
// byte/s, 8 micro-batches) under the pipeline objective on four GPUs grouped as `groups`.
sim::Problem GroupedStages(const std::vector<std::vector<sim::DeviceId>>& groups) {
  const sim::Problem uniform = sim::testing::UniformStages(3, 1, 1, 1, hw::kUnlimited, 4, 4);
  const sim::Problem p =
      std::move(sim::MakeProblem(uniform.graph, uniform.cluster, sim::Objective::kPipeline,
                                 cost::RooflineCostModel()))
          .value();
  return *sim::GroupedProblem(p, groups).value();
}

// A device of d replicas counts a d-th of its ops' time and, for each backward op, its ring
// all-reduce of 2 (d-1)/d of the op's gradients over 1 byte/s, over 8 micro-batches: the best
// max-load over every placement, counted here by hand.
double BruteForceReplicaMaxLoad(const sim::Problem& p) {
  const graph::Graph& g = p.g();
  double best = std::numeric_limits<double>::infinity();
  const int n = p.num_ops(), k = p.num_devices();
  int codes = 1;
  for (int i = 0; i < n; ++i) codes *= k;
  for (int code = 0; code < codes; ++code) {
    std::vector<double> load(static_cast<size_t>(k), 0);
    for (int i = 0, c = code; i < n; ++i, c /= k) {
      const sim::DeviceId device(c % k);
      const double d = p.c().device(device).replicas;
      const graph::Op& op = g.op(sim::OpId(i));
      load[static_cast<size_t>(c % k)] +=
          p.costs.OpTime(sim::OpId(i), device) / d + 2 * (d - 1) / d * op.param_bytes / 1.0 / 8;
    }
    best = std::min(best, *std::max_element(load.begin(), load.end()));
  }
  return best;
}

TEST(IlpTest, ADeviceOfReplicasCountsItsShareOfTheWorkAndItsAllReduce) {
  using sim::DeviceId;
  // 9 s of work: 3 s a device at best on three devices (one of two replicas, or not); on a GPU
  // and a group of three, 10/3 s (f0 f1 b0 b1 on the group: 2 s of work and two all-reduces of
  // 2/3 s; f2 b2 on the GPU: 3 s).
  for (const auto& [groups, expected] :
       std::vector<std::pair<std::vector<std::vector<DeviceId>>, double>>{
           {{{DeviceId(0)}, {DeviceId(1)}, {DeviceId(2), DeviceId(3)}}, 3.0},
           {{{DeviceId(0)}, {DeviceId(1), DeviceId(2), DeviceId(3)}}, 10.0 / 3}}) {
    const sim::Problem p = GroupedStages(groups);
    auto m = BuildContiguousModel(p, /*for_contiguity=*/false);
    ASSERT_TRUE(m.ok()) << m.status().message();
    auto solved = SolveWithCbc(NonContiguousMaxLoad(*m)->milp(), {});
    ASSERT_TRUE(solved.ok()) << solved.status().message();
    ASSERT_EQ(solved->status, MilpStatus::kOptimal);
    const double best = BruteForceReplicaMaxLoad(p);
    EXPECT_NEAR(best, expected, 1e-9) << groups.size() << " groups";
    EXPECT_NEAR(solved->objective, best, 1e-9) << groups.size() << " groups";
  }
}

// Every device of two replicas: the contiguous program's optimum is dp's.
TEST(IlpTest, ContiguousEqualsDpOnStagesOfReplicas) {
  using sim::DeviceId;
  const sim::Problem p = GroupedStages({{DeviceId(0), DeviceId(1)}, {DeviceId(2), DeviceId(3)}});
  auto m = BuildContiguousModel(p);
  ASSERT_TRUE(m.ok()) << m.status().message();
  auto solved = SolveWithCbc(ContiguousMaxLoad(*m)->milp(), {});
  ASSERT_TRUE(solved.ok()) << solved.status().message();
  ASSERT_EQ(solved->status, MilpStatus::kOptimal);
  auto lattice = IdealLattice::All(m->preds, 1000);
  ASSERT_TRUE(lattice.ok()) << lattice.status().message();
  const ContiguousSolution dp =
      SolveContiguous(*m, *lattice, std::numeric_limits<double>::infinity());
  ASSERT_TRUE(dp.found);
  EXPECT_NEAR(solved->objective, dp.max_load, 1e-9);
  // A share of 9 s of work, each b's all-reduce 0.25 s: not one GPU's 9 s.
  EXPECT_LT(dp.max_load, 9.0 / 2 + 1);
}

// A workload of the paper's testdata/dnn-partitioning, e.g. "throughput-inputs/LayerGraphs/
// bert24_inference", as a problem with the given objective.
sim::Problem PaperProblem(const std::string& workload, sim::Objective objective) {
  auto loaded = io::LoadGraph(std::string(DPLACE_SOURCE_DIR) + "/testdata/dnn-partitioning/" +
                              workload + ".json");
  EXPECT_TRUE(loaded.ok()) << loaded.status().message();
  return std::move(
             sim::MakeProblem(loaded->graph, loaded->cluster, objective, cost::RooflineCostModel()))
      .value();
}

class IlpContiguousPaperTest : public ::testing::TestWithParam<std::pair<const char*, double>> {};

// The contiguous program proves the DP's optimum of the paper's workloads (reference values from
// the paper's own program); bench/ and docs/exact.md have all 16.
TEST_P(IlpContiguousPaperTest, ProvesTheDpOptimum) {
  const sim::Problem problem =
      PaperProblem(std::string("throughput-inputs/LayerGraphs/") + GetParam().first,
                   sim::Objective::kThroughput);
  const Solved s = PlaceWith(*MakeIlpContiguousPlacer(), problem);
  EXPECT_TRUE(s.evaluation.feasible) << s.evaluation.reason;
  EXPECT_NEAR(s.evaluation.value, GetParam().second, 1e-6 * GetParam().second);
  EXPECT_EQ(s.note.rfind("optimal contiguous split", 0), 0u) << s.note;
  // Its bound holds for contiguous splits only, so it is not offered as the problem's bound.
  EXPECT_EQ(s.lower_bound, 0);
}

INSTANTIATE_TEST_SUITE_P(Paper, IlpContiguousPaperTest,
                         ::testing::Values(std::make_pair("bert24_inference", 17.78990625),
                                           std::make_pair("bert24_training", 41.7458125)),
                         [](const auto& test) { return std::string(test.param.first); });

TEST(IlpTest, NonContiguousStartsFromTheLinearOptimumAndProvesABound) {
  const sim::Problem p =
      PaperProblem("throughput-inputs/LayerGraphs/bert24_inference", sim::Objective::kThroughput);
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto ilp = MakeIlpPlacer({.max_nodes = 300})->Place(p, {.evaluator = evaluator.get()});
  ASSERT_TRUE(ilp.ok()) << ilp.status().message();
  const sim::Evaluation e = sim::EvaluateMaxLoad(p, ilp->placement);
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_LE(e.value, 17.78990625 * (1 + 1e-9));  // the contiguous optimum is a feasible start
  EXPECT_GT(ilp->proven_bound, p.lower_bound);
  EXPECT_LE(ilp->proven_bound, e.value * (1 + 1e-9));
  EXPECT_NE(ilp->note.find("bound"), std::string::npos) << ilp->note;
}

TEST(IlpTest, LatencyOnThePaperInputBeatsItsStarts) {
  const sim::Problem p =
      PaperProblem("latency-inputs/LayerGraphs/bert24_inference", sim::Objective::kLatency);
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto ilp = MakeIlpPlacer({.max_nodes = 200})->Place(p, {.evaluator = evaluator.get()});
  ASSERT_TRUE(ilp.ok()) << ilp.status().message();
  const sim::Evaluation e = sim::EvaluateLatency(p, ilp->placement);
  EXPECT_TRUE(e.feasible) << e.reason;
  for (const char* name : {"single", "dp", "pipedream"}) {
    const auto other_evaluator = sim::testing::EvaluatorOf(p);
    const std::unique_ptr<Placer> other = std::string(name) == "single" ? MakeSinglePlacer()
                                          : std::string(name) == "dp"   ? MakeDpPlacer()
                                                                        : MakePipeDreamPlacer();
    auto placed = other->Place(p, {.evaluator = other_evaluator.get()});
    ASSERT_TRUE(placed.ok());
    EXPECT_LE(e.value, sim::EvaluateLatency(p, placed->placement).value * (1 + 1e-9)) << name;
  }
  EXPECT_GE(ilp->proven_bound, 0);
  EXPECT_LE(ilp->proven_bound, e.value * (1 + 1e-9));
  EXPECT_GE(e.value, p.lower_bound);
}

// The integer programs hold a stage to what 1F1B keeps, sends and receives (as dp and the
// evaluator do): the chain no split fits by op sizes has its 2|2 split, 6 ms a stage.
TEST(IlpTest, OneFOneBStageMemoryAsTheSimulatorCountsIt) {
  for (const char* name : {"ilp", "ilp_contiguous"}) {
    for (bool pipelined : {false, true}) {
      const sim::Problem p = sim::testing::TrainingChain(pipelined);
      const auto evaluator = sim::testing::EvaluatorOf(p);
      // As the table makes them: ilp_contiguous gives its start (dp) half of the time.
      const std::unique_ptr<Placer> placer = std::string(name) == "ilp"
                                                 ? MakeIlpPlacer()
                                                 : MakeIlpContiguousPlacer({.start_share = 0.5});
      auto placed = placer->Place(p, {.evaluator = evaluator.get()});
      ASSERT_TRUE(placed.ok()) << name << ": " << placed.status().message();
      const sim::Evaluation e = sim::EvaluateMaxLoad(p, placed->placement);
      EXPECT_EQ(e.feasible, pipelined) << name << ": " << e.reason;
      if (pipelined) {
        EXPECT_NEAR(e.value, 6e-3, 1e-6) << name;
      }
    }
  }
}

TEST(IlpTest, ARecomputingStageFitsWhereKeepingEverythingDoesNot) {
  // The training chain under GPipe over 4 micro-batches on two GPUs of 800 bytes: keeping
  // everything, the first stage of the 2-2 split holds 80 + 4 x 200 and the second 80 + 4 x 300;
  // recomputing, 80 + 4 x 100 + 200 and 80 + 4 x 100 + 300 (what crosses a border per micro-batch,
  // one micro-batch in full).
  const sim::Problem chain = sim::testing::TrainingChain(true);
  hw::ClusterBuilder c("two_gpus");
  for (const char* name : {"gpu0", "gpu1"}) {
    c.AddDevice({.name = name, .kind = "gpu", .memory_bytes = 800, .peak_flops = 1e12});
  }
  auto cluster = std::make_shared<const hw::Cluster>(std::move(c.Build()).value());
  for (sim::Recompute recompute : {sim::Recompute::kNone, sim::Recompute::kFull}) {
    sim::Problem p = std::move(sim::MakeProblem(chain.graph, cluster, sim::Objective::kPipeline,
                                                cost::RooflineCostModel()))
                         .value();
    p.stage_memory = sim::Problem::StageMemory::kSchedule;
    p.schedule = sim::PipelineSchedule::kGPipe;
    p.microbatches = 4;
    p.recompute = recompute;
    const auto evaluator = sim::testing::EvaluatorOf(p);
    // With their starts (the linear-order optimum, dp's split), as the table makes them.
    for (const bool contiguous : {false, true}) {
      const std::unique_ptr<Placer> placer =
          contiguous ? MakeIlpContiguousPlacer({.start_share = 0.5}) : MakeIlpPlacer();
      auto placed = placer->Place(p, {.evaluator = evaluator.get()});
      ASSERT_TRUE(placed.ok()) << placed.status().message();
      const sim::Evaluation e = evaluator->Evaluate(placed->placement);
      EXPECT_EQ(e.feasible, recompute == sim::Recompute::kFull) << contiguous << e.reason;
    }
  }
}

}  // namespace
}  // namespace dplace::place
