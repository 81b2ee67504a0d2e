// Training memory against PyTorch's own figures (testdata/torch/saved_tensors.json, written once by
// tools/saved_tensors.py with torch.autograd.graph.saved_tensors_hooks): the activations autograd
// saves in a training forward of ResNet-50, ViT-B/16 and a GPT-2-small-like decoder, and the peak
// of a whole training step on one device.
#include <gtest/gtest.h>

#include "dplace/base/json_node.h"
#include "dplace/graph/training.h"
#include "dplace/io/load.h"
#include "dplace/sim/fit.h"

namespace dplace::io {
namespace {

std::string TorchPath(const std::string& file) {
  return std::string(DPLACE_SOURCE_DIR) + "/testdata/torch/" + file;
}

const Json& PyTorchFigures(const std::string& model) {
  static const Json figures = [] {
    auto text = ReadFile(TorchPath("saved_tensors.json"));
    EXPECT_TRUE(text.ok());
    return *ParseJson(*text);
  }();
  return figures["models"][model];
}

class TorchMemoryTest : public ::testing::TestWithParam<std::string> {};

// What dplace keeps for the backward pass (views as their base, each storage once) against the
// bytes autograd saves, less parameters and the model's inputs (not ops here): within 10%.
TEST_P(TorchMemoryTest, SavedActivationsWithinTenPercentOfPyTorch) {
  auto loaded = LoadGraph(TorchPath(GetParam() + ".onnx"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const double ours = graph::SavedActivationBytes(*loaded->graph);
  const double theirs = PyTorchFigures(GetParam())["saved_activation_bytes"].get<double>();
  EXPECT_NEAR(ours / theirs, 1, 0.10) << ours << " vs PyTorch " << theirs;
}

// Asked of the training step itself, the figure is the forward graph's (the edges from forward
// ops to backward ops carry exactly what backward keeps), not the whole step's tensors.
TEST_P(TorchMemoryTest, SavedActivationsOfTheTrainingStepAreTheForwardGraphs) {
  auto loaded = LoadGraph(TorchPath(GetParam() + ".onnx"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  auto train = graph::ExpandTraining(*loaded->graph);
  ASSERT_TRUE(train.ok());
  EXPECT_DOUBLE_EQ(graph::SavedActivationBytes(*train),
                   graph::SavedActivationBytes(*loaded->graph));
}

// The simulated peak of a training step on one device against what PyTorch 1.13 holds as the
// backward pass begins: the saved activations, the model's outputs (the loss reads them), and
// weights, gradients (zero_grad keeps them allocated) and Adam's two moments: within 15%.
TEST_P(TorchMemoryTest, TrainingPeakWithinFifteenPercent) {
  auto loaded = LoadGraph(TorchPath(GetParam() + ".onnx"));
  ASSERT_TRUE(loaded.ok());
  auto train = graph::ExpandTraining(*loaded->graph);
  ASSERT_TRUE(train.ok());
  auto g = std::make_shared<const graph::Graph>(std::move(train).value());
  auto cluster = LoadCluster("a100x8");
  ASSERT_TRUE(cluster.ok());
  auto problem = sim::MakeProblem(g, *cluster, sim::Objective::kStep, cost::RooflineCostModel());
  ASSERT_TRUE(problem.ok());
  const sim::KindFit gpu = sim::FitOnOneDevice(*problem, loaded->batch).front();
  double outputs = 0;  // tensors of the forward graph that nothing consumes
  for (graph::TensorId t{0}; t < loaded->graph->num_tensors(); ++t) {
    if (loaded->graph->Consumers(t).empty()) outputs += loaded->graph->tensor(t).bytes;
  }
  const Json& torch = PyTorchFigures(GetParam());
  const double expected = torch["saved_activation_bytes"].get<double>() + outputs +
                          4 * torch["parameter_bytes"].get<double>();
  EXPECT_NEAR(gpu.need.Total() / expected, 1, 0.15) << gpu.need.Total() << " vs " << expected;
  RecordProperty("peak_over_pytorch", std::to_string(gpu.need.Total() / expected));
  EXPECT_NEAR(gpu.need.weights_bytes / torch["parameter_bytes"].get<double>(), 1, 0.01);
}

INSTANTIATE_TEST_SUITE_P(Models, TorchMemoryTest,
                         ::testing::Values("resnet50", "vit_b_16", "gpt2_small"));

}  // namespace
}  // namespace dplace::io
