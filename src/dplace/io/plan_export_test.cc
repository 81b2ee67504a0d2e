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
  EXPECT_EQ(ModulePath("/Flatten"), "");
  EXPECT_EQ(ModulePath("Identity_3"), "");
}

// /a/x/MatMul -> /a/y/Relu -> /b/z/MatMul on gpu0, gpu0, gpu1 (of two GPUs and a CPU).
sim::Problem Chain() {
  graph::GraphBuilder b("chain");
  const auto x = b.AddOp({.name = "/a/x/MatMul", .flops = 100});
  const auto y = b.AddOp({.name = "/a/y/Relu", .flops = 1});
  const auto z = b.AddOp({.name = "/b/z/MatMul", .flops = 100});
  b.AddEdge(x, 0, y);
  b.AddEdge(y, 0, z);
  hw::ClusterBuilder c("m");
  c.AddDevice({.name = "gpu0", .kind = "gpu"});
  c.AddDevice({.name = "gpu1", .kind = "gpu"});
  c.AddDevice({.name = "cpu0", .kind = "cpu"});
  auto g = std::make_shared<const graph::Graph>(std::move(b.Build()).value());
  auto cluster = std::make_shared<const hw::Cluster>(std::move(c.Build()).value());
  return std::move(sim::MakeProblem(g, cluster, sim::Objective::kStep, cost::RooflineCostModel()))
      .value();
}

TEST(PlanExportTest, DeviceMapByModule) {
  const sim::Problem p = Chain();
  const Json j = DeviceMapJson(p, {0, 2, 1});
  EXPECT_EQ(j["a.x"], 0);
  EXPECT_EQ(j["a.y"], "cpu");
  EXPECT_EQ(j["b.z"], 1);
}

TEST(PlanExportTest, StagesOfAContiguousSplit) {
  const sim::Problem p = Chain();
  auto j = StagesJson(p, {1, 1, 0});
  ASSERT_TRUE(j.ok()) << j.status().message();
  EXPECT_EQ((*j)["stages"][0]["device"], "gpu1");
  EXPECT_EQ((*j)["stages"][0]["ops"], 2);
  EXPECT_EQ((*j)["split_points"], Json::array({"/b/z/MatMul"}));
  auto bad = StagesJson(p, {0, 1, 0});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a pipeline of contiguous stages"), std::string::npos);
}

}  // namespace
}  // namespace dplace::io
