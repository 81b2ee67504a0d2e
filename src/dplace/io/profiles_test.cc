#include <gtest/gtest.h>

#include <filesystem>

#include "dplace/io/load.h"
#include "dplace/io/test_files.h"

namespace dplace::io {
namespace {

const std::string kData = std::string(DPLACE_SOURCE_DIR) + "/testdata/";

TEST(PipeDreamProfileTest, EveryProfileBecomesATrainingGraph) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kData + "pipedream-profiles")) {
    if (entry.path().extension() != ".txt" || entry.path().filename() == "LICENSE.txt") continue;
    auto loaded = LoadGraph(entry.path().string());
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->format, GraphFormat::kPipeDream);
    const graph::Graph& g = *loaded->graph;
    EXPECT_EQ(g.num_ops() % 2, 0);
    EXPECT_EQ(g.groups().size(), static_cast<size_t>(g.num_ops() / 2));  // forward + its gradient
    ++files;
  }
  EXPECT_EQ(files, 14);
}

TEST(PipeDreamProfileTest, FieldsOfOneLayer) {
  auto loaded = LoadGraph(kData + "pipedream-profiles/vgg16.graph.txt");
  ASSERT_TRUE(loaded.ok());
  const graph::Graph& g = *loaded->graph;
  EXPECT_EQ(g.name(), "vgg16");
  EXPECT_EQ(g.num_ops(), 2 * 41);
  // node12 -- Conv2d(128, 256, ...) -- forward 10.814 ms, backward 18.335 ms, activation 411041792,
  // parameters 1180672.
  const graph::Op& f = g.op(*g.FindOp("node12"));
  EXPECT_EQ(f.type, "Conv2d");
  EXPECT_DOUBLE_EQ(*f.MeasuredTime("gpu"), 10.814e-3);
  EXPECT_DOUBLE_EQ(f.param_bytes, 1180672);
  EXPECT_DOUBLE_EQ(g.tensor(f.first_output).bytes, 411041792);
  EXPECT_EQ(f.device_kinds, std::vector<std::string>{"gpu"});
  const graph::Op& b = g.op(*g.FindOp("node12_grad"));
  EXPECT_EQ(b.kind, graph::OpKind::kBackward);
  EXPECT_DOUBLE_EQ(*b.MeasuredTime("gpu"), 18.335e-3);
  EXPECT_EQ(b.colocation, f.colocation);
  // 41 layers and 41 edge lines: each edge gives a forward and a backward edge, plus 41 stash
  // edges.
  EXPECT_EQ(g.edges().size(), 41u + 2 * 41u);
}

TEST(PiperInputTest, EveryInputLoadsWithItsMachine) {
  for (const char* name : {"bert32a100", "gnmt", "resnet"}) {
    auto loaded = LoadGraph(kData + "piper/" + name + ".json");
    ASSERT_TRUE(loaded.ok()) << loaded.status().message();
    EXPECT_EQ(loaded->format, GraphFormat::kPiper);
    ASSERT_NE(loaded->cluster, nullptr);
    EXPECT_GE(loaded->cluster->num_devices(), 2);
  }
  auto gnmt = LoadGraph(kData + "piper/gnmt.json");
  ASSERT_TRUE(gnmt.ok());
  EXPECT_EQ(gnmt->graph->num_ops(), 78);
  EXPECT_EQ(gnmt->graph->edges().size(), 104u);
  // node4: vanilla timePerSample 25.678 ms, memoryUsageB 264765440 (resident), A 13107200.
  const graph::Op& op = gnmt->graph->op(*gnmt->graph->FindOp("node4"));
  EXPECT_DOUBLE_EQ(*op.MeasuredTime("gpu"), 25.678e-3);
  EXPECT_DOUBLE_EQ(op.param_bytes, 264765440);
  EXPECT_DOUBLE_EQ(op.scratch_bytes, 13107200);
  EXPECT_DOUBLE_EQ(gnmt->cluster->device(0).memory_bytes, 80e9);
  // A layer with several outputs: their activation sizes add up.
  auto pd = LoadGraph(kData + "pipedream-profiles/gnmt.graph.txt");
  ASSERT_TRUE(pd.ok()) << pd.status().message();
}

TEST(ProfilesBadInputTest, OneLineErrors) {
  testing::TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {"node1 -- Conv2d -- forward_compute_time=1.0, backward_compute_time=2.0, "
       "activation_size=3\n",
       "line 1: missing parameter_size"},
      {"node1 -- Conv2d -- forward_compute_time=x, backward_compute_time=2.0, activation_size=3, "
       "parameter_size=4\n",
       "line 1: forward_compute_time 'x' is not a non-negative number"},
      {"node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=1, "
       "parameter_size=1\n\tnode1 -- node9\n",
       "line 2: edge to unknown node 'node9'"},
      {"node1 -- A -- forward_compute_time=1, backward_compute_time=1, activation_size=1, "
       "parameter_size=1\nnode1 -- A -- forward_compute_time=1, backward_compute_time=1, "
       "activation_size=1, parameter_size=1\n",
       "line 2: duplicate node 'node1'"},
      {R"({"maxDevices": 2, "maxMemoryPerDevice": 1e9, "bandwidth": 1e9, "nodes": [{"id": 0,
          "TMPCs": {"1": [{"id": "activation recomp"}]}}], "edges": []})",
       "nodes[0].TMPCs.1: has no \"vanilla\" option"},
  };
  for (const auto& [content, expected] : cases) {
    const std::string path = dir.Write("bad.graph.txt", content);
    auto g = LoadGraph(path);
    ASSERT_FALSE(g.ok()) << content;
    EXPECT_EQ(g.status().message().rfind(path + ": ", 0), 0u) << g.status().message();
    EXPECT_NE(g.status().message().find(expected), std::string::npos) << g.status().message();
  }
}

}  // namespace
}  // namespace dplace::io
