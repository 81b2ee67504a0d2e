// The frameworks' default pipeline splits on a decoder-shaped chain, worked out by hand, and
// the same split in the frameworks' own terms (io/framework_export.h).
#include <gtest/gtest.h>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph_builder.h"
#include "dplace/io/framework_export.h"
#include "dplace/place/baseline/baseline.h"
#include "dplace/sim/test_problems.h"

namespace dplace::place {
namespace {

// A chain of ops (name, parameter bytes) on two GPUs and a CPU.
sim::Problem Chain(const std::vector<std::pair<std::string, double>>& ops) {
  graph::GraphBuilder b("decoder");
  graph::OpId prev{-1};
  for (const auto& [name, params] : ops) {
    const graph::OpId id = b.AddOp({.name = name, .flops = 1e6, .param_bytes = params}, {{64}});
    if (prev >= 0) b.AddEdge(prev, 0, id);
    prev = id;
  }
  hw::ClusterBuilder c("two_gpus");
  c.AddDevice({.name = "gpu0", .kind = "gpu", .peak_flops = 1e12});
  c.AddDevice({.name = "gpu1", .kind = "gpu", .peak_flops = 1e12});
  c.AddDevice({.name = "cpu0", .kind = "cpu", .peak_flops = 1e11});
  auto g = std::make_shared<const graph::Graph>(std::move(b.Build()).value());
  auto cluster = std::make_shared<const hw::Cluster>(std::move(c.Build()).value());
  return std::move(
             sim::MakeProblem(g, cluster, sim::Objective::kThroughput, cost::RooflineCostModel()))
      .value();
}

// embed (100 parameter bytes) -> layers.0..3 (10 each, two ops per block) -> norm (0) -> head
// (100).
sim::Problem Decoder() {
  std::vector<std::pair<std::string, double>> ops = {{"/embed/Gather", 100}};
  for (int i = 0; i < 4; ++i) {
    const std::string block = "/layers." + std::to_string(i);
    ops.emplace_back(block + "/attn/MatMul", 10);
    ops.emplace_back(block + "/Add", 0);
  }
  ops.emplace_back("/norm/Mul", 0);
  ops.emplace_back("/head/MatMul", 100);
  return Chain(ops);
}

sim::Placement Placed(Placer& placer) {
  const sim::Problem p = Decoder();
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto r = placer.Place(p, {.evaluator = evaluator.get()});
  EXPECT_TRUE(r.ok()) << r.status().message();
  return r.ok() ? r->placement : sim::Placement{};
}

// The device of each op, as one string ("0" for gpu0, "1" for gpu1), ops in the order embed,
// layers.0 (two ops), layers.1, layers.2, layers.3, norm, head.
std::string Split(std::unique_ptr<Placer> placer) {
  std::string out;
  for (sim::DeviceId d : Placed(*placer)) out += std::to_string(d.value());
  return out;
}

TEST(FrameworkSplitsTest, UniformDealsTheLayersInEqualCounts) {
  // Layers: embed, layers.0-3, norm, head (7) over 2 stages: 4 and 3.
  EXPECT_EQ(Split(MakeUniformSplitPlacer()), "00000001111");
}

// A tied head owns no parameters (it reads the embedding's): DeepSpeed's layer list still has it
// (TiedLayerSpec), so uniform deals the same 7 layers, 4 and 3.
TEST(FrameworkSplitsTest, UniformCountsAParameterlessTiedHeadAsALayer) {
  std::vector<std::pair<std::string, double>> ops = {{"/embed/Gather", 100}};
  for (int i = 0; i < 4; ++i) {
    ops.emplace_back("/layers." + std::to_string(i) + "/attn/MatMul", 10);
    ops.emplace_back("/layers." + std::to_string(i) + "/Add", 0);
  }
  ops.emplace_back("/norm/Mul", 0);
  ops.emplace_back("/head/MatMul", 0);
  const sim::Problem p = Chain(ops);
  const auto evaluator = sim::testing::EvaluatorOf(p);
  auto r = MakeUniformSplitPlacer()->Place(p, {.evaluator = evaluator.get()});
  ASSERT_TRUE(r.ok()) << r.status().message();
  std::string split;
  for (sim::DeviceId d : r->placement) split += std::to_string(d.value());
  EXPECT_EQ(split, "00000001111");
}

TEST(FrameworkSplitsTest, ParametersBalancesParameterBytes) {
  // embed + layers.0-1 = 120 bytes against layers.2-3 + norm + head = 120.
  EXPECT_EQ(Split(MakeParametersSplitPlacer()), "00000111111");
}

TEST(FrameworkSplitsTest, BlocksSplitsTheBlocksEvenly) {
  // Two blocks each; the embedding with the first stage, norm and head with the last.
  EXPECT_EQ(Split(MakeBlocksSplitPlacer()), "00000111111");
}

TEST(FrameworkSplitsTest, TheSplitInEachFrameworksTerms) {
  const sim::Problem p = Decoder();
  const Json f = io::FrameworkSplits(p, Placed(*MakeUniformSplitPlacer()),
                                     {sim::DeviceId(0), sim::DeviceId(1)});
  ASSERT_FALSE(f.contains("reason")) << f.dump();
  EXPECT_EQ(f["block_list"], "layers");
  // torch.distributed.pipelining: the first module of every later stage, split at its start.
  EXPECT_EQ(f["torch_pipelining"]["split_spec"], Json({{"layers.3", "SplitPoint.BEGINNING"}}));
  EXPECT_EQ(f["torchtitan"]["pipeline_parallel_split_points"], Json({"layers.3"}));
  // DeepSpeed: the layer list and the boundaries of each stage's range of it.
  EXPECT_EQ(f["deepspeed"]["layers"],
            Json({"embed", "layers.0", "layers.1", "layers.2", "layers.3", "norm", "head"}));
  EXPECT_EQ(f["deepspeed"]["parts"], Json({0, 4, 7}));
  // Megatron: blocks on the first and last stage; the layout string with E and L.
  EXPECT_EQ(f["megatron"]["num_layers_in_first_pipeline_stage"], 3);
  EXPECT_EQ(f["megatron"]["num_layers_in_last_pipeline_stage"], 1);
  EXPECT_EQ(f["megatron"]["pipeline_model_parallel_layout"], "Et*3|tL");
  // vLLM: blocks per stage, comma-separated, summing to the number of blocks.
  EXPECT_EQ(f["vllm"]["VLLM_PP_LAYER_PARTITION"], "3,1");
}

TEST(FrameworkSplitsTest, ASplitInsideABlockHasNoFrameworkTerms) {
  const sim::Problem p = Decoder();
  // layers.1's MatMul on gpu0, its Add on gpu1.
  const sim::Placement cut = sim::OnDevices({0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1});
  const Json f = io::FrameworkSplits(p, cut, {sim::DeviceId(0), sim::DeviceId(1)});
  ASSERT_TRUE(f.contains("reason"));
  EXPECT_NE(f["reason"].get<std::string>().find("block layers.1 is split"), std::string::npos)
      << f.dump();
}

// Megatron-LM and vLLM count each stage's blocks in index order between the embedding and the
// head: a module between the blocks, or blocks run out of index order, get a reason for them
// (the other frameworks split at module names and keep their terms).
TEST(FrameworkSplitsTest, CountsThatWouldContradictTheSplitAreAReason) {
  auto terms = [](const std::vector<std::string>& modules) {
    std::vector<std::pair<std::string, double>> ops;
    for (const std::string& m : modules) ops.emplace_back("/" + m + "/MatMul", 10);
    const sim::Problem p = Chain(ops);
    sim::Placement split(p.num_ops(), sim::DeviceId(0));
    for (size_t i = ops.size() / 2; i < ops.size(); ++i) split[sim::OpId(i)] = sim::DeviceId(1);
    return io::FrameworkSplits(p, split, {sim::DeviceId(0), sim::DeviceId(1)});
  };
  const Json between = terms({"embed", "layers.0", "layers.1", "pool", "layers.2", "layers.3"});
  ASSERT_FALSE(between.contains("reason")) << between.dump();
  EXPECT_NE(between["megatron"].value("reason", "").find("module pool runs between the blocks"),
            std::string::npos)
      << between.dump();
  EXPECT_TRUE(between["vllm"].contains("reason"));
  EXPECT_EQ(between["torch_pipelining"]["split_spec"], Json({{"pool", "SplitPoint.BEGINNING"}}));
  const Json shuffled = terms({"embed", "layers.0", "layers.2", "layers.1", "layers.3", "head"});
  EXPECT_NE(
      shuffled["vllm"].value("reason", "").find("out of index order (layers.1 after layers.2)"),
      std::string::npos)
      << shuffled.dump();
  EXPECT_TRUE(shuffled["megatron"].contains("reason"));
  // In order, the embedding first and the head last: counts.
  const Json ordered = terms({"embed", "layers.0", "layers.1", "layers.2", "layers.3", "head"});
  EXPECT_EQ(ordered["vllm"]["VLLM_PP_LAYER_PARTITION"], "2,2");
  EXPECT_EQ(ordered["megatron"]["pipeline_model_parallel_layout"], "Et*2|t*2L");
}

}  // namespace
}  // namespace dplace::place
