#include "dplace/run/plan_graph.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "dplace/io/load.h"
#include "dplace/run/load.h"

namespace dplace::run {
namespace {

const std::string kVgg = DPLACE_SOURCE_DIR "/models/train/vgg16.onnx";
const std::string kLlama8b = DPLACE_SOURCE_DIR "/models/configs/llama3-8b.json";

// The one-GPU step of the graph, as `place`'s fit report judges it.
sim::KindFit OneGpu(const std::string& cluster) {
  auto loaded = LoadGraphFile({.path = kVgg, .training = true});
  EXPECT_TRUE(loaded.ok());
  auto c = io::LoadCluster(cluster);
  EXPECT_TRUE(c.ok());
  auto p = MakeLoadedProblem(*loaded, *c, "step", kVgg);
  EXPECT_TRUE(p.ok());
  return sim::FitOnOneDevice(**p, loaded->batch).front();
}

const GraphPlanRow* Family(const GraphPlanResponse& r, const std::string& family) {
  for (const GraphPlanRow& row : r.rows) {
    if (row.family == family) return &row;
  }
  return nullptr;
}

TEST(PlanGraphTest, AGraphIsPlannedAsEveryFamilyItHasAndTheFastestThatFitsWins) {
  auto r = PlanGraph({.model = kVgg, .cluster = "a100x8", .global_batch = 0, .time_limit_s = 2});
  EXPECT_FALSE(r.ok());  // a global batch is required
  auto loaded = LoadGraphFile({.path = kVgg, .training = true});
  ASSERT_TRUE(loaded.ok());
  ASSERT_GT(loaded->batch, 0);
  r = PlanGraph(
      {.model = kVgg, .cluster = "a100x8", .global_batch = 16 * loaded->batch, .time_limit_s = 2});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->gpus, 8);
  for (const char* family : {"data-parallel", "fsdp", "tensor", "pipeline", "op-level"}) {
    EXPECT_NE(Family(*r, family), nullptr) << family;
  }
  ASSERT_GE(r->best, 0);
  const GraphPlanRow& best = r->rows[static_cast<size_t>(r->best)];
  for (const GraphPlanRow& row : r->rows) {
    EXPECT_LE(row.gpus, 8) << row.family;
    EXPECT_GT(row.iteration_s, 0) << row.family;
    if (row.fits) {
      EXPECT_LE(best.iteration_s, row.iteration_s) << row.family;
    }
  }
  // Tensor parallelism splits the classifier's first two linears (a column -> row pair, 4096
  // wide); its convolutions and last linear stay whole.
  ASSERT_EQ(r->tensor_blocks.size(), 1u);
  EXPECT_FALSE(r->tensor_blocks[0].attention);
  EXPECT_EQ(r->tensor_blocks[0].ways, 4096);
}

TEST(PlanGraphTest, TensorParallelismSplitsATransformersAttentionByHeadsAndItsMlp) {
  const std::string bert = DPLACE_SOURCE_DIR "/models/bert_encoder.onnx";
  auto loaded = LoadGraphFile({.path = bert, .training = true});
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto c = io::LoadCluster("a100x8");
  ASSERT_TRUE(c.ok());
  auto p = MakeLoadedProblem(*loaded, *c, "step", bert);
  ASSERT_TRUE(p.ok());
  const sim::KindFit one = sim::FitOnOneDevice(**p, loaded->batch).front();
  // One run a step: no data parallelism beyond one GPU, so the tensor family is TP alone.
  auto r = PlanGraph(
      {.model = bert, .cluster = "a100x8", .global_batch = loaded->batch, .time_limit_s = 1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->tensor_blocks.size(), 24u);  // 12 layers' attention and MLP
  for (size_t i = 0; i < r->tensor_blocks.size(); ++i) {
    const TensorBlockRow& b = r->tensor_blocks[i];
    EXPECT_EQ(b.attention, i % 2 == 0) << i;
    EXPECT_EQ(b.ways, b.attention ? 12 : 3072) << b.module;  // BERT-base's heads, FFN width
  }
  const GraphPlanRow* tp = Family(*r, "tensor");
  ASSERT_NE(tp, nullptr);
  const int t = tp->gpus;
  ASSERT_TRUE(t == 2 || t == 4) << t;  // a degree that divides the 12 heads
  // The blocks hold most of the weights but not the embedding: each rank holds more than a t-th.
  EXPECT_LT(tp->memory.weights_bytes, one.need.weights_bytes * 0.9);
  EXPECT_GT(tp->memory.weights_bytes, one.need.weights_bytes / t);
  EXPECT_LT(tp->memory.activations_bytes, one.need.activations_bytes);
  // Each block's two all-reduces a micro-batch at least: slower than a t-th of the step.
  EXPECT_GT(tp->iteration_s, one.step_s / t);
}

TEST(PlanGraphTest, DataParallelismOnOneGpuIsTheOneGpuStepAndFsdpShardsWhatItHolds) {
  const sim::KindFit one = OneGpu("a100x8");
  auto loaded = LoadGraphFile({.path = kVgg, .training = true});
  ASSERT_TRUE(loaded.ok());
  // One run of the graph a step: data parallelism of degree 1, the step itself; no sharding.
  auto r = PlanGraph(
      {.model = kVgg, .cluster = "a100x8", .global_batch = loaded->batch, .time_limit_s = 1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GraphPlanRow* dp = Family(*r, "data-parallel");
  ASSERT_NE(dp, nullptr);
  EXPECT_EQ(dp->gpus, 1);
  EXPECT_NEAR(dp->iteration_s, one.step_s, 1e-12 + 1e-9 * one.step_s);
  EXPECT_DOUBLE_EQ(dp->memory.Total(), one.need.Total());
  EXPECT_EQ(Family(*r, "fsdp"), nullptr);  // no FSDP over one GPU

  // Eight runs: FSDP over eight GPUs holds an eighth of the weights, gradients and optimizer, and
  // two ops' weights whole (the one gathered and the next).
  r = PlanGraph(
      {.model = kVgg, .cluster = "a100x8", .global_batch = 8 * loaded->batch, .time_limit_s = 1});
  ASSERT_TRUE(r.ok()) << r.status().message();
  const GraphPlanRow* fsdp = Family(*r, "fsdp");
  ASSERT_NE(fsdp, nullptr);
  ASSERT_EQ(fsdp->gpus, 8);
  double largest = 0;
  for (const graph::Op& op : loaded->graph->ops()) {
    if (op.kind == graph::OpKind::kForward) largest = std::max(largest, op.param_bytes);
  }
  EXPECT_DOUBLE_EQ(fsdp->memory.weights_bytes, one.need.weights_bytes / 8 + 2 * largest);
  EXPECT_DOUBLE_EQ(fsdp->memory.gradients_bytes, one.need.gradients_bytes / 8);
  EXPECT_DOUBLE_EQ(fsdp->memory.optimizer_bytes, one.need.optimizer_bytes / 8);
  EXPECT_DOUBLE_EQ(fsdp->memory.activations_bytes, one.need.activations_bytes);
  // Data parallelism over d GPUs runs 8/d of the graph's runs on each, and exchanges gradients.
  dp = Family(*r, "data-parallel");
  ASSERT_NE(dp, nullptr);
  EXPECT_GT(dp->iteration_s, 8.0 / dp->gpus * one.step_s * 0.5);
}

TEST(PlanGraphTest, AGlobalBatchTheGraphsBatchDoesNotDivideIsRefusedInOneLine) {
  auto loaded = LoadGraphFile({.path = kVgg, .training = true});
  ASSERT_TRUE(loaded.ok());
  if (loaded->batch < 2) GTEST_SKIP() << "the graph's batch is 1";
  auto r = PlanGraph({.model = kVgg, .cluster = "a100x8", .global_batch = loaded->batch + 1});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("not a multiple of the graph's batch"), std::string::npos)
      << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
}

TEST(PlanGraphTest, AGraphThatDoesNotSayItsBatchIsRefusedInOneLine) {
  auto r = PlanGraph({.model = DPLACE_SOURCE_DIR "/testdata/pipedream-profiles/alexnet.graph.txt",
                      .cluster = "a100x8",
                      .global_batch = 64});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("does not say its batch size"), std::string::npos)
      << r.status().message();
}

TEST(PlanGraphTest, ConfigsPipersInputsAndGraphsAreToldApart) {
  EXPECT_EQ(KindOfModel(kVgg), ModelKind::kGraph);
  EXPECT_EQ(KindOfModel(DPLACE_SOURCE_DIR "/testdata/pipedream-profiles/alexnet.graph.txt"),
            ModelKind::kGraph);
  EXPECT_EQ(KindOfModel(kLlama8b), ModelKind::kConfig);
  EXPECT_EQ(KindOfModel(DPLACE_SOURCE_DIR "/testdata/piper/bert32a100.json"), ModelKind::kPiper);
  // Neither: the config path says why (a cluster file, a missing file).
  EXPECT_EQ(KindOfModel(DPLACE_SOURCE_DIR "/clusters/a100x8.json"), ModelKind::kConfig);
  EXPECT_EQ(KindOfModel(DPLACE_SOURCE_DIR "/no/such/file.json"), ModelKind::kConfig);
}

}  // namespace
}  // namespace dplace::run
