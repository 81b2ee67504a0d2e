#include "dplace/io/plan_export.h"

#include <gtest/gtest.h>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph_builder.h"

namespace dplace::io {
namespace {

TEST(PlanExportTest, ModulePathFromScopedNames) {
  EXPECT_EQ(ModulePath("/layer1/layer1.0/conv1/Conv"), "layer1.0.conv1");
  EXPECT_EQ(ModulePath("/layer1/layer1.0/conv1/Conv/grad"), "layer1.0.conv1");
  EXPECT_EQ(ModulePath("/layers.3/q/MatMul"), "layers.3.q");
  EXPECT_EQ(ModulePath("/encoder/layers.0/self_attn/Slice"), "encoder.layers.0.self_attn");
  // Nested nn.Sequential: each scope extends the one before it (torch.onnx's naming).
  EXPECT_EQ(ModulePath("/features/features.1/block/block.0/block.0.0/Conv"),
            "features.1.block.0.0");
  EXPECT_EQ(ModulePath("/encoder/layers/encoder_layer_0/mlp/mlp.0/MatMul"),
            "encoder.layers.encoder_layer_0.mlp.0");
  EXPECT_EQ(ModulePath("/Flatten"), "");
  EXPECT_EQ(ModulePath("Identity_3"), "");
}

// The ops named `names`, one after another (each feeds the next), one FLOP each.
template <size_t N>
StatusOr<graph::Graph> Chain(graph::GraphBuilder& b, const char* const (&names)[N]) {
  graph::OpId prev{-1};
  for (const char* name : names) {
    const graph::OpId id = b.AddOp({.name = name, .flops = 1});
    if (prev >= 0) b.AddEdge(prev, 0, id);
    prev = id;
  }
  return b.Build();
}

// The co-location group of the op named `name`, "(free)" when none.
std::string GroupOf(const graph::Graph& g, const char* name) {
  const graph::Op& op = g.op(*g.FindOp(name));
  return op.colocation == graph::kNoGroup ? std::string("(free)") : g.groups()[op.colocation];
}

// A ViT-like tower: the patch embedding, the tower's own concat and position add, two blocks,
// the tower's own class-token slice, then a head. At depth 3 the blocks are units; the tower's own
// ops around them must not become one unit (it would feed the blocks and be fed by them).
TEST(PlanExportTest, ModuleUnitsNeverFuseAParentsOwnOpsWithItsChildren) {
  graph::GraphBuilder b("tower");
  const char* names[] = {"/vision/patch/Conv",    "/vision/Concat",
                         "/vision/Add",           "/vision/blocks.0/fc/MatMul",
                         "/vision/blocks.0/Relu", "/vision/blocks.1/fc/MatMul",
                         "/vision/Gather",        "/head/MatMul"};
  auto g = Chain(b, names);
  ASSERT_TRUE(g.ok());
  auto grouped = GroupByModule(*g, 3);
  ASSERT_TRUE(grouped.ok()) << grouped.status().message();
  auto group = [&](const char* name) { return GroupOf(*grouped, name); };
  EXPECT_EQ(group("/vision/Concat"), "(free)");
  EXPECT_EQ(group("/vision/Gather"), "(free)");
  EXPECT_EQ(group("/vision/patch/Conv"), "module:vision.patch");
  EXPECT_EQ(group("/vision/blocks.0/fc/MatMul"), "module:vision.blocks.0");
  EXPECT_EQ(group("/vision/blocks.0/Relu"), "module:vision.blocks.0");
  EXPECT_EQ(group("/vision/blocks.1/fc/MatMul"), "module:vision.blocks.1");
  EXPECT_EQ(group("/head/MatMul"), "module:head");  // a leaf above the depth: one unit
  // At depth 1 the tower is one unit, its own ops with it.
  auto whole = GroupByModule(*g, 1);
  ASSERT_TRUE(whole.ok());
  EXPECT_EQ(whole->op(*whole->FindOp("/vision/Concat")).colocation,
            whole->op(*whole->FindOp("/vision/blocks.1/fc/MatMul")).colocation);
}

// Two towers, each with its list of blocks at another depth, a module beside each list and a
// head: `--unit blocks` makes each block a unit and each module beside them one, never fusing a
// tower; the towers' own ops around their blocks stay free.
TEST(PlanExportTest, BlockUnitsAreEachTowersBlocksAtAnyDepth) {
  graph::GraphBuilder b("towers");
  const char* names[] = {"/text/embed/Gather",
                         "/text/layers.0/attn/MatMul",
                         "/text/layers.0/Relu",
                         "/text/layers.1/attn/MatMul",
                         "/text/final_norm/Mul",
                         "/vision/encoder/blocks.0/fc/MatMul",
                         "/vision/encoder/blocks.1/fc/MatMul",
                         "/vision/encoder/blocks.2/fc/MatMul",
                         "/vision/Concat",
                         "/vision/patch/Conv",
                         "/head/MatMul"};
  auto g = Chain(b, names);
  ASSERT_TRUE(g.ok());
  auto grouped = GroupByBlocks(*g);
  ASSERT_TRUE(grouped.ok()) << grouped.status().message();
  auto group = [&](const char* name) { return GroupOf(*grouped, name); };
  EXPECT_EQ(group("/text/embed/Gather"), "module:text.embed");
  EXPECT_EQ(group("/text/layers.0/attn/MatMul"), "module:text.layers.0");
  EXPECT_EQ(group("/text/layers.0/Relu"), "module:text.layers.0");
  EXPECT_EQ(group("/text/layers.1/attn/MatMul"), "module:text.layers.1");
  EXPECT_EQ(group("/text/final_norm/Mul"), "module:text.final_norm");
  EXPECT_EQ(group("/vision/encoder/blocks.2/fc/MatMul"), "module:vision.encoder.blocks.2");
  EXPECT_EQ(group("/vision/Concat"), "(free)");
  EXPECT_EQ(group("/vision/patch/Conv"), "module:vision.patch");
  EXPECT_EQ(group("/head/MatMul"), "module:head");
}

// A T5: the shared embedding "shared" is called by the encoder and by the decoder (torch.onnx
// scopes it "/encoder/shared/", "/decoder/shared/"), and the LM head reads it transposed.
graph::Graph TiedModel() {
  graph::GraphBuilder b("tied");
  const auto enc = b.AddOp({.name = "/encoder/shared/Gather", .parameters = {"shared.weight"}});
  const auto konst = b.AddOp({.name = "/encoder/shared/Constant"});
  const auto block = b.AddOp({.name = "/encoder/block.0/MatMul", .flops = 10});
  const auto dec =
      b.AddOp({.name = "/decoder/shared/Gather", .shared_parameters = {"shared.weight"}});
  const auto t = b.AddOp({.name = "/lm_head/Transpose", .shared_parameters = {"shared.weight"}});
  const auto head = b.AddOp({.name = "/lm_head/MatMul", .flops = 10});
  b.AddEdge(enc, 0, block);
  b.AddEdge(konst, 0, block);
  b.AddEdge(block, 0, head);
  b.AddEdge(dec, 0, head);
  b.AddEdge(t, 0, head);
  return std::move(b.Build()).value();
}

TEST(PlanExportTest, AModuleScopedUnderAnotherNameIsTheModuleItsParameterNames) {
  const graph::Graph g = TiedModel();
  const std::vector<std::string> modules = graph::OpModules(g);
  EXPECT_EQ(modules[0], "shared");
  EXPECT_EQ(modules[1], "shared");   // the Constant of the scope "encoder.shared"
  EXPECT_EQ(modules[3], "shared");   // reads the weight another op holds, scoped as "shared"
  EXPECT_EQ(modules[4], "lm_head");  // reads it too, but in a scope of its own
}

TEST(PlanExportTest, ATiedWeightsReadersShareItsHoldersGroup) {
  const graph::Graph tied = graph::TieSharedParameters(TiedModel());
  auto group = [&](const char* name) { return tied.op(*tied.FindOp(name)).colocation; };
  EXPECT_NE(group("/encoder/shared/Gather"), graph::kNoGroup);
  EXPECT_EQ(tied.groups()[group("/encoder/shared/Gather")], "tied:shared.weight");
  EXPECT_EQ(group("/decoder/shared/Gather"), group("/encoder/shared/Gather"));
  EXPECT_EQ(group("/lm_head/Transpose"), group("/encoder/shared/Gather"));
  EXPECT_EQ(group("/lm_head/MatMul"), graph::kNoGroup);  // with the Transpose by the module rule
  EXPECT_EQ(group("/encoder/block.0/MatMul"), graph::kNoGroup);
}

// /a/x/MatMul -> /a/y/Relu -> /b/z/MatMul on gpu0, gpu0, gpu1 (of two GPUs and a CPU).
sim::Problem Chain(sim::Objective objective = sim::Objective::kStep) {
  graph::GraphBuilder b("chain");
  const auto x = b.AddOp({.name = "/a/x/MatMul", .flops = 100});
  const auto y = b.AddOp({.name = "/a/y/Relu", .flops = 1});
  const auto z = b.AddOp({.name = "/b/z/MatMul", .flops = 100});
  b.AddEdge(x, 0, y);
  b.AddEdge(y, 0, z);
  hw::ClusterBuilder c("m");
  c.AddDevice({.name = "gpu0", .kind = "gpu", .peak_flops = 1e12});
  c.AddDevice({.name = "gpu1", .kind = "gpu", .peak_flops = 1e12});
  c.AddDevice({.name = "cpu0", .kind = "cpu", .peak_flops = 1e11});
  auto g = std::make_shared<const graph::Graph>(std::move(b.Build()).value());
  auto cluster = std::make_shared<const hw::Cluster>(std::move(c.Build()).value());
  return std::move(sim::MakeProblem(g, cluster, objective, cost::RooflineCostModel())).value();
}

TEST(PlanExportTest, DeviceMapByModule) {
  const sim::Problem p = Chain();
  const Json j = DeviceMapJson(p, sim::OnDevices({0, 2, 1}));
  EXPECT_EQ(j["a.x"], 0);
  EXPECT_EQ(j["a.y"], "cpu");
  EXPECT_EQ(j["b"], 1);  // the coarsest module on one device, not b.z beside it
  EXPECT_EQ(j.size(), 3u);
  EXPECT_EQ(DeviceMapJson(p, sim::OnDevices({1, 1, 1})), Json({{"", 1}}));  // the whole model
}

// Parameters name their module exactly (scopes may not: "/blk/Conv" holds "blk.0.weight");
// a root parameter is listed by name; a leaf module split by its own ops is reported.
TEST(PlanExportTest, DeviceMapFromParameterNamesIsFlatAndCovering) {
  graph::GraphBuilder b("params");
  const auto conv = b.AddOp({.name = "/blk/Conv", .flops = 100, .parameters = {"blk.0.weight"}});
  const auto mul = b.AddOp({.name = "/Mul", .flops = 1, .parameters = {"scale"}});
  const auto mm = b.AddOp({.name = "/head/MatMul", .flops = 100, .parameters = {"head.weight"}});
  const auto add = b.AddOp({.name = "/head/Add", .flops = 1, .parameters = {"head.bias"}});
  b.AddEdge(conv, 0, mul);
  b.AddEdge(mul, 0, mm);
  b.AddEdge(mm, 0, add);
  hw::ClusterBuilder c("m");
  c.AddDevice({.name = "gpu0", .kind = "gpu", .peak_flops = 1e12});
  c.AddDevice({.name = "gpu1", .kind = "gpu", .peak_flops = 1e12});
  auto g = std::make_shared<const graph::Graph>(std::move(b.Build()).value());
  auto cluster = std::make_shared<const hw::Cluster>(std::move(c.Build()).value());
  const sim::Problem p =
      std::move(sim::MakeProblem(g, cluster, sim::Objective::kStep, cost::RooflineCostModel()))
          .value();
  const DeviceMap map = MakeDeviceMap(p, sim::OnDevices({0, 1, 1, 0}));
  // blk, not blk.0: the coarsest module on one device; the root's parameter by its name.
  EXPECT_EQ(map.map, Json({{"blk", 0}, {"scale", 1}, {"head", 1}}));
  ASSERT_EQ(map.split_modules.size(), 1u);
  EXPECT_NE(map.split_modules[0].find("module 'head' is split over gpu0, gpu1"), std::string::npos);
}

TEST(PlanExportTest, StagesOfAContiguousSplit) {
  const sim::Problem p = Chain();
  auto j = StagesJson(p, sim::OnDevices({1, 1, 0}));
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)["stages"][0]["device"], "gpu1");
  EXPECT_EQ((*j)["stages"][0]["ops"], 2);
  EXPECT_EQ((*j)["split_points"], Json::array({"/b/z/MatMul"}));
  // The second stage starts module b: it is named b (the block), not b.z (its first leaf).
  EXPECT_EQ((*j)["split_modules"], Json::array({"b"}));
  EXPECT_EQ((*j)["stages"][1]["module"], "b");
  // Cut inside a: the second stage's module is a.y, a having begun in the first stage.
  EXPECT_EQ((*StagesJson(p, sim::OnDevices({1, 0, 0})))["split_modules"], Json::array({"a.y"}));
  auto bad = StagesJson(p, sim::OnDevices({0, 1, 0}));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a pipeline of contiguous stages"), std::string::npos);
}

// The host CPU between two GPUs: a stage whose transfers the step objective charges, but which the
// throughput objective's max-load model sends for free, so it is not written as a stage there. At
// either end it is the host holding the inputs or outputs, and is.
TEST(PlanExportTest, TheHostCpuIsAMiddleStageOnlyWhereItsTransfersAreCharged) {
  EXPECT_TRUE(StagesJson(Chain(sim::Objective::kStep), sim::OnDevices({0, 2, 1})).ok());
  auto middle = StagesJson(Chain(sim::Objective::kThroughput), sim::OnDevices({0, 2, 1}));
  ASSERT_FALSE(middle.ok());
  EXPECT_NE(middle.status().message().find("the host CPU cpu0 is stage 2 of 3"), std::string::npos)
      << middle.status().message();
  EXPECT_TRUE(StagesJson(Chain(sim::Objective::kThroughput), sim::OnDevices({2, 0, 1})).ok());
  EXPECT_TRUE(StagesJson(Chain(sim::Objective::kThroughput), sim::OnDevices({0, 1, 2})).ok());
}

}  // namespace
}  // namespace dplace::io
