// `dp` reproduces the optima of the paper's throughput workloads (reference values from the paper's
// own program, testdata/dnn-partitioning/README.md) to a relative 1e-6. Inception-v3 (about 5 s
// each) runs in bench/paper_dp_benchmark.cc with all the others.
#include <gtest/gtest.h>

#include <random>

#include "dplace/graph/training.h"
#include "dplace/io/load.h"
#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/exact/ideal_lattice.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/max_load.h"
#include "dplace/sim/pipeline_sim.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

// By op sizes dp finds no split of the chain that fits; under 1F1B it finds 2|2 (TrainingChain).
TEST(DpStageMemoryTest, OneFOneBMemoryFindsTheSplitOpSizesRefuse) {
  const sim::Problem op_sizes = sim::testing::TrainingChain(/*pipelined=*/false);
  const auto judge_sizes = sim::testing::EvaluatorOf(op_sizes);
  auto refused = MakeDpPlacer()->Place(op_sizes, {.evaluator = judge_sizes.get()});
  ASSERT_TRUE(refused.ok()) << refused.status().message();
  EXPECT_FALSE(sim::EvaluateMaxLoad(op_sizes, refused->placement).feasible);

  const sim::Problem pipelined = sim::testing::TrainingChain(/*pipelined=*/true);
  const auto judge = sim::testing::EvaluatorOf(pipelined);
  auto placed = MakeDpPlacer()->Place(pipelined, {.evaluator = judge.get()});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  const sim::Evaluation e = sim::EvaluateMaxLoad(pipelined, placed->placement);
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_NEAR(e.value, 2 * 3e-3, 1e-3);  // two units a stage, forward 1 ms + backward 2 ms each
  // The schedule's own simulation agrees that every stage fits.
  auto run = sim::SimulatePipeline(pipelined, placed->placement, sim::PipelineSchedule::k1F1B, 4);
  ASSERT_TRUE(run.ok()) << run.status().message();
  EXPECT_TRUE(run->feasible) << run->reason;
}

struct Optimum {
  const char* workload;
  double max_load;
};

class DpOptimumTest : public ::testing::TestWithParam<Optimum> {};

TEST_P(DpOptimumTest, ReproducesThePaperOptimum) {
  auto loaded = io::LoadGraph(std::string(DPLACE_SOURCE_DIR) +
                              "/testdata/dnn-partitioning/throughput-inputs/" +
                              GetParam().workload + ".json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto problem = sim::MakeProblem(loaded->graph, loaded->cluster, sim::Objective::kThroughput,
                                  cost::RooflineCostModel());
  ASSERT_TRUE(problem.ok());
  const auto evaluator = sim::testing::EvaluatorOf(*problem);
  auto placed = MakeDpPlacer()->Place(*problem, {.evaluator = evaluator.get()});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  const sim::Evaluation e = sim::EvaluateMaxLoad(*problem, placed->placement);
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_NEAR(e.value, GetParam().max_load, 1e-6 * GetParam().max_load);
}

INSTANTIATE_TEST_SUITE_P(
    Paper, DpOptimumTest,
    ::testing::Values(Optimum{"LayerGraphs/bert24_inference", 17.78990625},
                      Optimum{"LayerGraphs/bert24_training", 41.7458125},
                      Optimum{"LayerGraphs/resnet50_inference", 33.774666015625},
                      Optimum{"LayerGraphs/resnet50_training", 78.63181250000001},
                      Optimum{"OperatorGraphs/bert_l-3_inference", 27.9185676799125},
                      Optimum{"OperatorGraphs/bert_l-3_training", 65.30314912208605},
                      Optimum{"OperatorGraphs/bert_l-6_inference", 29.57950580645155},
                      Optimum{"OperatorGraphs/bert_l-6_training", 72.86496632241122},
                      Optimum{"OperatorGraphs/bert_l-12_inference", 147.47798444934838},
                      Optimum{"OperatorGraphs/bert_L-12_training", 437.9976378578455},
                      Optimum{"OperatorGraphs/resnet50_inference", 124.34884977404485},
                      Optimum{"OperatorGraphs/resnet50_training", 255.19441645217384},
                      Optimum{"LayerGraphs/gnmt_inference", 32.910658203125},
                      Optimum{"LayerGraphs/gnmt_training", 107.0044140625}),
    [](const auto& test) {
      std::string name = test.param.workload;
      for (char& ch : name) {
        if (ch == '/' || ch == '-') ch = '_';
      }
      return name;
    });

// A chain of `n` ops with seeded random times and output sizes, on two GPUs and a CPU.
sim::Problem RandomChain(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> time(0.1, 2), bytes(0, 1);
  graph::GraphBuilder b("chain");
  graph::OpId last{-1};
  for (int i = 0; i < n; ++i) {
    const graph::OpId op =
        b.AddOp(sim::testing::TimedOp("op" + std::to_string(i), time(rng)), {{bytes(rng), -1}});
    if (last >= 0) b.AddEdge(last, 0, op);
    last = op;
  }
  return sim::testing::Make(b, sim::testing::ThreeDevices(), sim::Objective::kThroughput);
}

// A chain with k units hanging off it, each a sink of its own: 2^k ideals and more. Past the
// limit it is refused before any ideal is enumerated; within it every ideal is found.
TEST(IdealLatticeTest, AnAntichainOfMoreThanTheLimitIsRefusedAtOnceAndASmallerOneEnumerated) {
  auto chain_with_sinks = [](int k) {
    std::vector<std::vector<int>> preds(2 * static_cast<size_t>(k));
    for (int i = 1; i < k; ++i) preds[static_cast<size_t>(i)] = {i - 1};
    for (int i = 0; i < k; ++i)
      preds[static_cast<size_t>(k) + static_cast<size_t>(i)] = {i};  // a sink off unit i
    return preds;
  };
  auto small = IdealLattice::All(chain_with_sinks(4), 1000);
  ASSERT_TRUE(small.ok()) << small.status().message();
  // Ideals: the chain's prefix {0..j-1} with any subset of the j sinks hanging off it.
  EXPECT_EQ(small->size(), 1 + 2 + 4 + 8 + 16);
  // A deadline already past: enumerating would stop on it at the first ideal, so the refusal
  // for the count shows that nothing was enumerated.
  auto wide = IdealLattice::All(chain_with_sinks(4000), 2000000,
                                std::chrono::steady_clock::now() - std::chrono::seconds(1));
  ASSERT_FALSE(wide.ok());
  EXPECT_NE(wide.status().message().find("more than 2000000 contiguous prefixes"),
            std::string::npos)
      << wide.status().message();
}

// GPipe holds every micro-batch on every stage. The 2|2 split of the chain holds 200 bytes per
// micro-batch on gpu0 (f0's output kept, f1's sent) and 300 on gpu1 (f1's copy, f2's and f3's
// outputs kept), over 80 resident each: with one micro-batch it fits in 490 bytes (280, 380);
// with two gpu1 needs 680 and no split fits, where 1F1B's 2 + 1 in flight fit (the test above).
TEST(DpStageMemoryTest, GPipeHoldsEveryMicrobatchOnEveryStage) {
  for (int microbatches : {1, 2}) {
    sim::Problem p = sim::testing::TrainingChain(/*pipelined=*/true);
    p.schedule = sim::PipelineSchedule::kGPipe;
    p.microbatches = microbatches;
    const auto judge = sim::testing::EvaluatorOf(p);
    auto placed = MakeDpPlacer()->Place(p, {.evaluator = judge.get()});
    ASSERT_TRUE(placed.ok()) << placed.status().message();
    const sim::Evaluation e = sim::EvaluateMaxLoad(p, placed->placement);
    EXPECT_EQ(e.feasible, microbatches == 1) << microbatches << ": " << e.reason;
    if (microbatches == 1) {
      EXPECT_DOUBLE_EQ(e.devices[sim::DeviceId(0)].peak_memory_bytes, 280);
      EXPECT_DOUBLE_EQ(e.devices[sim::DeviceId(1)].peak_memory_bytes, 380);
      auto run = sim::SimulatePipeline(p, placed->placement, sim::PipelineSchedule::kGPipe, 1);
      ASSERT_TRUE(run.ok());
      EXPECT_TRUE(run->feasible) << run->reason;
    }
  }
}

// What dp counts for a stage under 1F1B is what the evaluator and the pipeline simulator count
// (HeldPerMicrobatch: kept for backward, sent and received, a storage kept and sent once): on a
// chain with a skip connection (f0 -> f3, kept by f3's backward), for every contiguous split in
// two.
TEST(DpStageMemoryTest, DpCountsWhatTheSimulatorCountsAtEveryCut) {
  graph::GraphBuilder b("skip");
  std::vector<graph::OpId> f;
  for (int i = 0; i < 5; ++i) {
    graph::Op op = sim::testing::TimedOp("f" + std::to_string(i), 1e-3);
    op.param_bytes = 10;
    op.saves_output = false;
    f.push_back(b.AddOp(op, {{100.0 + 10 * i}}));
    if (i > 0) b.AddEdge(f[static_cast<size_t>(i) - 1], 0, f.back(), /*saved=*/i % 2 == 1);
  }
  b.AddEdge(f[0], 0, f[3], /*saved=*/true);
  auto g = std::make_shared<const graph::Graph>(graph::ExpandTraining(b.Build().value()).value());
  hw::ClusterBuilder c("two_gpus");
  for (const char* name : {"gpu0", "gpu1"}) {
    c.AddDevice({.name = name, .kind = "gpu", .memory_bytes = 1e9, .peak_flops = 1e12});
  }
  auto cluster = std::make_shared<const hw::Cluster>(c.Build().value());
  sim::Problem p =
      sim::MakeProblem(g, cluster, sim::Objective::kThroughput, cost::RooflineCostModel()).value();
  p.stage_memory = sim::Problem::StageMemory::kSchedule;
  auto model = BuildContiguousModel(p);
  ASSERT_TRUE(model.ok()) << model.status().message();
  for (int cut = 1; cut < model->num_units; ++cut) {
    UnitSetLoad first(*model), second(*model);
    first.Reset(nullptr);
    second.Reset(nullptr);
    sim::Placement placement(g->ops().size(), sim::DeviceId(0));
    for (int u = 0; u < model->num_units; ++u) {
      (u < cut ? first : second).Add(u);
      for (sim::OpId op : model->unit_ops[static_cast<size_t>(u)]) {
        placement[op] = sim::DeviceId(u < cut ? 0 : 1);
      }
    }
    const sim::Evaluation e = sim::EvaluateMaxLoad(p, placement);
    EXPECT_DOUBLE_EQ(first.MemoryAt(2), e.devices[sim::DeviceId(0)].peak_memory_bytes) << cut;
    EXPECT_DOUBLE_EQ(second.MemoryAt(1), e.devices[sim::DeviceId(1)].peak_memory_bytes) << cut;
    // Recomputing everything, the evaluator keeps per micro-batch what a device receives and
    // sends, and one micro-batch in full; dp what crosses its units' borders (more: safe). Auto
    // counts the less of keeping and recomputing.
    sim::Problem full = p, chosen = p;
    full.recompute = sim::Recompute::kFull;
    chosen.recompute = sim::Recompute::kAuto;
    auto recomputing = BuildContiguousModel(full);
    ASSERT_TRUE(recomputing.ok());
    UnitSetLoad a(*recomputing);
    a.Reset(nullptr);
    for (int u = 0; u < cut; ++u) a.Add(u);
    const double kept = e.devices[sim::DeviceId(0)].peak_memory_bytes;
    const double again =
        sim::EvaluateMaxLoad(full, placement).devices[sim::DeviceId(0)].peak_memory_bytes;
    EXPECT_GE(a.MemoryAt(2), again) << cut;
    EXPECT_NE(again, kept) << cut;
    EXPECT_DOUBLE_EQ(
        sim::EvaluateMaxLoad(chosen, placement).devices[sim::DeviceId(0)].peak_memory_bytes,
        std::min(kept, again))
        << cut;
  }
}

TEST(LinearSplitTest, GreedyBoundThenDpEqualsThePlainDp) {
  for (uint32_t seed = 1; seed <= 20; ++seed) {
    const sim::Problem p = RandomChain(30, seed);
    auto model = BuildContiguousModel(p);
    ASSERT_TRUE(model.ok()) << model.status().message();
    const ContiguousSolution plain = SolveContiguous(*model, IdealLattice::Chain(model->num_units),
                                                     std::numeric_limits<double>::infinity());
    const ContiguousSolution greedy = SolveChainGreedy(*model, Deadline::max());
    const ContiguousSolution linear = SolveLinear(*model, Deadline::max());
    ASSERT_TRUE(plain.found && greedy.found && linear.found) << "seed " << seed;
    EXPECT_TRUE(linear.complete);
    EXPECT_GE(greedy.max_load, plain.max_load * (1 - 1e-12)) << "seed " << seed;
    EXPECT_NEAR(linear.max_load, plain.max_load, 1e-9 * plain.max_load) << "seed " << seed;
    const sim::Evaluation e = sim::EvaluateMaxLoad(p, ToPlacement(*model, linear, p.num_ops()));
    EXPECT_NEAR(e.value, linear.max_load, 1e-9 * linear.max_load) << "seed " << seed;
  }
}

// UniformStages (two of F 1, I 1, W 1 s, activations 5 bytes and gradients 1 over links of 1
// byte/s) on four GPUs under the pipeline objective, each backward op holding `gradient_bytes`
// of weight gradients; dp chooses replicas.
sim::Problem ReplicableChain(double gradient_bytes) {
  const sim::Problem uniform =
      sim::testing::UniformStages(2, 1, 1, 1, hw::kUnlimited, 4, gradient_bytes);
  sim::Problem p = std::move(sim::MakeProblem(uniform.graph, uniform.cluster,
                                              sim::Objective::kPipeline, cost::RooflineCostModel()))
                       .value();
  p.replicas_auto = true;
  return p;
}

// Without replicas dp's best pipeline runs f0 f1 | b1 | b0 on three GPUs (2.5 s a micro-batch);
// with them, when the all-reduce is free, one stage of four replicas, each running two of the
// eight micro-batches (6 s each: 1.5 s a micro-batch).
TEST(DpReplicasTest, ChoosesReplicasWhenTheirAllReduceCostsLessThanTheyGain) {
  const sim::Problem p = ReplicableChain(0);
  const auto judge = sim::testing::EvaluatorOf(p);
  auto placed = MakeDpPlacer()->Place(p, {.evaluator = judge.get()});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  ASSERT_EQ(placed->groups.size(), 1u);
  EXPECT_EQ(placed->groups[0].size(), 4u);
  auto grouped = sim::GroupedProblem(p, placed->groups);
  ASSERT_TRUE(grouped.ok()) << grouped.status().message();
  const sim::Evaluation with = sim::MakeEvaluator(*grouped)->Evaluate(
      sim::GroupedPlacement(placed->placement, placed->groups));
  ASSERT_TRUE(with.feasible) << with.reason;

  sim::Problem one_each = p;
  one_each.replicas_auto = false;
  const auto plain_judge = sim::testing::EvaluatorOf(one_each);
  auto plain = MakeDpPlacer()->Place(one_each, {.evaluator = plain_judge.get()});
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_TRUE(plain->groups.empty());
  const sim::Evaluation without = plain_judge->Evaluate(plain->placement);
  EXPECT_DOUBLE_EQ(with.value, 1.5);
  EXPECT_DOUBLE_EQ(without.value, 2.5);
}

TEST(DpReplicasTest, KeepsOneReplicaAStageWhenTheAllReduceCostsMore) {
  // 1 MB of gradients a stage over 1 byte/s: any all-reduce outweighs the step.
  const sim::Problem p = ReplicableChain(1e6);
  const auto judge = sim::testing::EvaluatorOf(p);
  auto placed = MakeDpPlacer()->Place(p, {.evaluator = judge.get()});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  EXPECT_TRUE(placed->groups.empty());
  EXPECT_TRUE(judge->Evaluate(placed->placement).feasible);
}

// Fixed groups (--replicas 1,1,2) under three uniform stages (f 1 s, b 2 s each): one replica a
// stage, the best split's bottleneck holds 4 s of work a micro-batch (f0 f1 f2 | b2 b1 | b0, say);
// a stage on the group of two replicas runs half the micro-batches, so dp gives that group the
// most work: the forwards and b2, 5 s a micro-batch, 2.5 on each replica, then b1 and b0 on a GPU
// each (2 s).
TEST(DpReplicasTest, GivesMoreWorkToTheGroupOfMoreReplicas) {
  const sim::Problem uniform = sim::testing::UniformStages(3, 1, 1, 1, hw::kUnlimited, 4);
  const sim::Problem p =
      std::move(sim::MakeProblem(uniform.graph, uniform.cluster, sim::Objective::kPipeline,
                                 cost::RooflineCostModel()))
          .value();
  auto grouped = sim::GroupedProblem(
      p, {{sim::DeviceId(0)}, {sim::DeviceId(1)}, {sim::DeviceId(2), sim::DeviceId(3)}});
  ASSERT_TRUE(grouped.ok()) << grouped.status().message();
  const auto judge = sim::MakeEvaluator(*grouped);
  auto placed = MakeDpPlacer()->Place(**grouped, {.evaluator = judge.get()});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  const graph::Graph& g = p.g();
  std::vector<std::string> on_group;
  for (sim::OpId op : g.op_ids()) {
    if (placed->placement[op] == sim::DeviceId(2)) on_group.push_back(g.op(op).name);
  }
  EXPECT_EQ(on_group, (std::vector<std::string>{"f0", "f1", "f2", "b2"}));
  const sim::Evaluation e = judge->Evaluate(placed->placement);
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_LT(e.value, 4.0) << "no better than one replica a stage";
}

// A chain of six ops of 1 s on a GPU and 0.5 s on an NPU (transfers free) over gpu0, npu0 and
// gpu1 (in that order), the NPU of `npu_memory_bytes` and each op holding 10 bytes.
sim::Problem MixedAccelerators(double npu_memory_bytes) {
  graph::GraphBuilder b("mixed");
  graph::OpId last{-1};
  for (int i = 0; i < 6; ++i) {
    graph::Op o = sim::testing::TimedOp("op" + std::to_string(i), 1);
    o.time_s.emplace_back("npu", 0.5);
    o.param_bytes = 10;
    const graph::OpId op = b.AddOp(std::move(o), {{0, 0}});
    if (last >= 0) b.AddEdge(last, 0, op);
    last = op;
  }
  hw::ClusterBuilder c("mixed");
  c.AddDevice({.name = "gpu0", .kind = "gpu"});
  c.AddDevice({.name = "npu0", .kind = "npu", .memory_bytes = npu_memory_bytes});
  c.AddDevice({.name = "gpu1", .kind = "gpu"});
  c.SetDefaultLink({.bandwidth_bytes_per_s = 1, .latency_s = 0});
  return sim::testing::Make(b, std::make_shared<const hw::Cluster>(std::move(c.Build()).value()),
                            sim::Objective::kThroughput);
}

// Accelerators of two classes: each stage counts its own device's times and memory. The NPU
// runs an op in half the time: the best split gives it twice a GPU's share, gpu0 op0 op1 and
// npu0 op2 to op5 (2 s each; stages in the devices' order); with room for two ops on the NPU
// (1 s), the GPUs take the rest: op0 op1 | op2 op3 | op4 op5 (2 s on each GPU).
TEST(DpHeterogeneousTest, EachStageCountsItsOwnAcceleratorsTimesAndMemory) {
  for (const auto& [memory, on_npu] :
       std::vector<std::pair<double, int>>{{hw::kUnlimited, 4}, {20, 2}}) {
    const sim::Problem p = MixedAccelerators(memory);
    const auto judge = sim::testing::EvaluatorOf(p);
    auto placed = MakeDpPlacer()->Place(p, {.evaluator = judge.get()});
    ASSERT_TRUE(placed.ok()) << placed.status().message();
    const sim::Evaluation e = sim::EvaluateMaxLoad(p, placed->placement);
    EXPECT_TRUE(e.feasible) << e.reason;
    EXPECT_DOUBLE_EQ(e.value, 2.0) << memory;
    int npu = 0;
    for (sim::DeviceId d : placed->placement) npu += d == sim::DeviceId(1);
    EXPECT_EQ(npu, on_npu) << memory;
  }
}

// 200,000 units in a chain: the search is a loop, not a recursion as deep as the chain, and the
// chain's prefixes are not stored as bitsets (200k x 200k bits); the deadline ends it.
TEST(LinearSplitTest, AVeryLongChainKeepsItsDeadline) {
  const sim::Problem p = RandomChain(200'000, 7);
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto placed =
      MakePipeDreamPlacer()->Place(p, {.evaluator = evaluator.get(), .limits = {.seconds = 1}});
  ASSERT_TRUE(placed.ok()) << placed.status().message();
  EXPECT_TRUE(evaluator->Evaluate(placed->placement).feasible);
}

}  // namespace
}  // namespace dplace::place
