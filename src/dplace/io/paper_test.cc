// The paper's workloads and human-expert splits, evaluated by dplace's max-load model, must give
// the figures of the paper's own program (testdata/dnn-partitioning/README.md).
#include <gtest/gtest.h>

#include <filesystem>

#include "dplace/io/load.h"
#include "dplace/io/paper_json.h"
#include "dplace/sim/max_load.h"

namespace dplace::io {
namespace {

const std::string kData = std::string(DPLACE_SOURCE_DIR) + "/testdata/dnn-partitioning/";

struct ExpertCase {
  const char* workload;
  const char* split;
  double max_load;  // the paper program's figure, as printed (6 significant digits)
};

class ExpertSplitTest : public ::testing::TestWithParam<ExpertCase> {};

TEST_P(ExpertSplitTest, MaxLoadEqualsThePaperProgram) {
  const ExpertCase& c = GetParam();
  auto loaded = LoadGraph(kData + "throughput-inputs/LayerGraphs/" + c.workload + ".json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  ASSERT_NE(loaded->cluster, nullptr);
  auto problem = sim::MakeProblem(loaded->graph, loaded->cluster, sim::Objective::kThroughput,
                                  cost::RooflineCostModel());
  ASSERT_TRUE(problem.ok()) << problem.status().message();
  auto placement = LoadPlan(kData + "human-experts/" + c.split + "_expert.json", *loaded->graph,
                            *loaded->cluster);
  ASSERT_TRUE(placement.ok()) << placement.status().message();
  sim::Evaluation e = sim::EvaluateMaxLoad(*problem, *placement);
  EXPECT_NEAR(e.value, c.max_load, 5e-6 * c.max_load) << c.workload;
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_LE(problem->lower_bound, e.value);
}

INSTANTIATE_TEST_SUITE_P(
    Paper, ExpertSplitTest,
    ::testing::Values(ExpertCase{"bert24_inference", "bert24_inference", 20.084},
                      ExpertCase{"bert24_training", "bert24_training", 49.4049},
                      ExpertCase{"gnmt_inference", "gnmt_inference", 46.2085},
                      ExpertCase{"gnmt_training", "gnmt_training", 137.154},
                      ExpertCase{"inceptionv3_inference", "inceptionv3_inference", 102.482},
                      ExpertCase{"inceptionv3_training", "inceptionv3_inference", 213.654},
                      ExpertCase{"resnet50_inference", "resnet50_inference", 43.9183},
                      ExpertCase{"resnet50_training", "resnet50_inference", 112.108}),
    [](const auto& test) { return std::string(test.param.workload); });

TEST(PaperInputTest, EveryWorkloadLoadsWithItsMachine) {
  int files = 0;
  for (const char* dir : {"throughput-inputs", "latency-inputs"}) {
    for (const auto& entry : std::filesystem::recursive_directory_iterator(kData + dir)) {
      if (entry.path().extension() != ".json") continue;
      auto loaded = LoadGraph(entry.path().string());
      ASSERT_TRUE(loaded.ok()) << loaded.status().message();
      EXPECT_GT(loaded->graph->num_ops(), 0);
      EXPECT_GE(loaded->cluster->num_devices(), 2);
      ++files;
    }
  }
  EXPECT_EQ(files, 24);
}

TEST(PaperInputTest, FieldsMapOntoTheModel) {
  auto loaded = LoadGraph(kData + "throughput-inputs/LayerGraphs/bert24_training.json");
  ASSERT_TRUE(loaded.ok());
  const graph::Graph& g = *loaded->graph;
  const hw::Cluster& c = *loaded->cluster;
  EXPECT_EQ(g.num_ops(), 64);
  EXPECT_EQ(g.edges().size(), 110u);
  EXPECT_EQ(c.num_devices(), 7);  // maxFPGAs 6 + maxCPUs 1
  EXPECT_DOUBLE_EQ(c.device(hw::DeviceId(0)).memory_bytes, 17185374208.0);
  const graph::Op& n3 = g.op(*g.FindOp("node3"));
  EXPECT_EQ(n3.source_id, 3);
  EXPECT_DOUBLE_EQ(*n3.MeasuredTime("accel"), 0.696);
  EXPECT_DOUBLE_EQ(*n3.MeasuredTime("cpu"), 6.959999999999999);
  EXPECT_DOUBLE_EQ(n3.param_bytes, 131325952.0);
  const graph::Op& grad = g.op(*g.FindOp("node1grad"));
  EXPECT_EQ(grad.kind, graph::OpKind::kBackward);
  EXPECT_EQ(grad.colocation, g.op(*g.FindOp("node1")).colocation);
}

TEST(PaperSplitTest, WrittenSplitReadsBackToTheSamePlacement) {
  auto loaded = LoadGraph(kData + "throughput-inputs/LayerGraphs/gnmt_training.json");
  ASSERT_TRUE(loaded.ok());
  auto problem = sim::MakeProblem(loaded->graph, loaded->cluster, sim::Objective::kThroughput,
                                  cost::RooflineCostModel());
  ASSERT_TRUE(problem.ok());
  auto placement =
      LoadPlan(kData + "human-experts/gnmt_training_expert.json", *loaded->graph, *loaded->cluster);
  ASSERT_TRUE(placement.ok());
  sim::Evaluation e = sim::EvaluateMaxLoad(*problem, *placement);
  Json written = WritePaperSplit(*loaded->graph, *loaded->cluster, *placement, e);
  EXPECT_DOUBLE_EQ(written["maxLoad"].get<double>(), e.value);
  auto reread = ReadPaperSplit(JsonNode(written, "(top level)"), *loaded->graph, *loaded->cluster);
  ASSERT_TRUE(reread.ok()) << reread.status().message();
  EXPECT_EQ(*reread, *placement);
}

}  // namespace
}  // namespace dplace::io
