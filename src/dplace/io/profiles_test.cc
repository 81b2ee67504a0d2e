#include "dplace/io/profiles.h"

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
  EXPECT_DOUBLE_EQ(gnmt->cluster->device(hw::DeviceId(0)).memory_bytes, 80e9);
  // A layer with several outputs: their activation sizes add up.
  auto pd = LoadGraph(kData + "pipedream-profiles/gnmt.graph.txt");
  ASSERT_TRUE(pd.ok()) << pd.status().message();
}

TEST(BaechiProfileTest, GnmtV2ForwardGraph) {
  auto loaded = LoadGraph(kData + "baechi-gnmt/gnmt_v2_fwd.json");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->format, GraphFormat::kBaechi);
  const graph::Graph& g = *loaded->graph;
  EXPECT_EQ(g.name(), "gnmt_v2_fwd");
  EXPECT_EQ(g.num_ops(), 2828);
  EXPECT_EQ(g.edges().size(), 5225u);
  // The 1,603 profiled ops add up to 115,871 us.
  double total = 0;
  for (const graph::Op& op : g.ops()) total += *op.MeasuredTime("gpu");
  EXPECT_NEAR(total, 0.115871, 1e-9);
  // The output projection: 27,838 us, one 614,400,000-byte output, co-located with its noop.
  const graph::Op& proj = g.op(*g.FindOp("output_projection/Tensordot/MatMul"));
  EXPECT_EQ(proj.type, "MatMul");
  EXPECT_DOUBLE_EQ(*proj.MeasuredTime("gpu"), 27838e-6);
  EXPECT_DOUBLE_EQ(g.tensor(proj.first_output).bytes, 614400000);
  EXPECT_EQ(proj.device_kinds, std::vector<std::string>{"gpu"});
  ASSERT_NE(proj.colocation, graph::kNoGroup);
  EXPECT_EQ(g.op(*g.FindOp("output_projection_noop")).colocation, proj.colocation);
  // 1,222 nodes name 309 co-location targets; groups join each target with its members.
  EXPECT_EQ(g.groups().size(), 309u);
  // A constant is unprofiled: no time, no output bytes.
  const graph::Op& c = g.op(*g.FindOp("dataset/tensors/component_0"));
  EXPECT_DOUBLE_EQ(*c.MeasuredTime("gpu"), 0);
}

TEST(BaechiProfileTest, SlotsAndControlEdges) {
  testing::TempDir dir;
  const std::string path = dir.Write("tiny.json", R"({"nodes": [
      {"id": 0, "name": "a", "op": "Split", "compute_time_us": {"gpu": 10},
       "output_bytes_per_output": [100, 200], "persistent_memory_bytes": 5,
       "temporary_memory_bytes": 7, "colocation": null},
      {"id": 1, "name": "b", "op": "Add", "compute_time_us": null, "colocation": ["loc:@a"]},
      {"id": 2, "name": "c", "op": "NoOp", "compute_time_us": {"gpu": 1}}],
    "edges": [{"src": 0, "dst": 1, "src_output_slot": 1, "bytes": 200, "control": false},
              {"src": 0, "dst": 2, "control": true}]})");
  auto loaded = LoadGraph(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const graph::Graph& g = *loaded->graph;
  const graph::Op& a = g.op(graph::OpId(0));
  EXPECT_EQ(a.num_outputs, 3);  // two data outputs and the empty one control edges read
  EXPECT_DOUBLE_EQ(a.param_bytes, 5);
  EXPECT_DOUBLE_EQ(a.scratch_bytes, 7);
  EXPECT_EQ(g.Inputs(graph::OpId(1))[0], a.first_output + 1);
  EXPECT_DOUBLE_EQ(g.tensor(g.Inputs(graph::OpId(1))[0]).bytes, 200);
  EXPECT_DOUBLE_EQ(g.tensor(g.Inputs(graph::OpId(2))[0]).bytes, 0);
  EXPECT_EQ(g.op(graph::OpId(1)).colocation, a.colocation);
  EXPECT_NE(a.colocation, graph::kNoGroup);
  EXPECT_EQ(g.op(graph::OpId(2)).colocation, graph::kNoGroup);
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
      {R"({"nodes": [{"id": 0, "name": "a", "compute_time_us": {"gpu": -1}}], "edges": []})",
       "nodes[0].compute_time_us.gpu: "},
      {R"({"nodes": [{"id": 0, "name": "a", "compute_time_us": {"gpu": 1}}],
          "edges": [{"src": 0, "dst": 4}]})",
       "edges[0].dst: no node with id 4"},
      {R"({"nodes": [{"id": 0, "name": "a", "compute_time_us": {"gpu": 1}},
                     {"id": 0, "name": "b", "compute_time_us": null}], "edges": []})",
       "nodes[1].id: duplicate node id 0"},
      {R"({"nodes": [{"id": 0, "name": "a", "compute_time_us": {"gpu": 1},
                      "colocation": ["a"]}], "edges": []})",
       "nodes[0].colocation[0]: expected \"loc:@<op name>\""},
      {R"({"nodes": [{"id": 0, "name": "a", "compute_time_us": null}], "edges": []})",
       "nodes: no node has a compute_time_us"},
      {R"({"nodes": [{"id": 0, "name": "a", "compute_time_us": {"gpu": 1}},
                     {"id": 1, "name": "b", "compute_time_us": {"gpu": 1}}],
          "edges": [{"src": 0, "dst": 1}, {"src": 1, "dst": 0}]})",
       "cycle"},
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

namespace dplace::io {
namespace {

// Piper's input with every option (job/piper.h): the real files read, bad ones refused in a line.
TEST(PiperInstanceTest, EveryOptionOfPipersInputsIsRead) {
  for (const char* name : {"bert32a100", "gnmt", "resnet"}) {
    auto text = ReadFile(std::string(DPLACE_SOURCE_DIR "/testdata/piper/") + name + ".json");
    ASSERT_TRUE(text.ok()) << name;
    auto j = ParseJson(*text);
    ASSERT_TRUE(j.ok()) << name;
    auto in = ReadPiperInstance(JsonNode(*j, "(top level)"));
    ASSERT_TRUE(in.ok()) << name << ": " << in.status().message();
    size_t with_tp = 0;
    for (const job::PiperLayer& l : in->layers) with_tp += l.options.size() > 2 ? 1 : 0;
    if (std::string(name) == "bert32a100") {
      EXPECT_GT(with_tp, 0u);  // degrees 1, 2, 4, 8
    }
    EXPECT_GT(in->microbatches, 1);
  }
}

TEST(PiperInstanceTest, BadPiperInputsAreOneLineErrors) {
  const std::string base = R"({"maxDevices": 2, "maxMemoryPerDevice": 1e9, "bandwidth": 1e9,
      "mbsInBatch": 4, "edges": [{"sourceId": 0, "destId": 1, "communicationCost": 10}],
      "nodes": [{"id": 0, "TMPCs": {"1": [OPT0]}}, {"id": 1, "TMPCs": {"1": [OPT1]}}]})";
  const std::string opt0 = R"({"id": "vanilla", "timePerSample": 1, "parameterSize": 1,
      "memoryUsageA": 1, "memoryUsageB": 1, "syncTimeFw": {}, "syncTimeBw": {"1": 0}})";
  const std::string opt1 = R"({"id": "vanilla", "timePerSample": 1, "parameterSize": 1,
      "memoryUsageA": 1, "memoryUsageB": 1, "syncTimeFw": {"0": 0}, "syncTimeBw": {}})";
  auto read = [&](const std::string& a, const std::string& b) {
    std::string text = base;
    text.replace(text.find("OPT0"), 4, a);
    text.replace(text.find("OPT1"), 4, b);
    auto j = ParseJson(text);
    EXPECT_TRUE(j.ok());
    return ReadPiperInstance(JsonNode(*j, "(top level)")).status();
  };
  EXPECT_TRUE(read(opt0, opt1).ok()) << read(opt0, opt1).message();
  std::string wrong_key = opt1;
  wrong_key.replace(wrong_key.find(R"({"0": 0})"), 8, R"({"7": 0})");
  EXPECT_NE(read(opt0, wrong_key).message().find("not a neighbour"), std::string::npos);
  EXPECT_NE(read(opt0 + "," + opt0 + "," + opt0, opt1).message().find("more than two options"),
            std::string::npos);
  std::string negative = opt0;
  negative.replace(negative.find(R"("timePerSample": 1)"), 18, R"("timePerSample": -1)");
  EXPECT_FALSE(read(negative, opt1).ok());
}

}  // namespace
}  // namespace dplace::io
