#include <gtest/gtest.h>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/training.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/load.h"
#include "dplace/io/plan_json.h"
#include "dplace/io/test_files.h"

namespace dplace::io {
namespace {

const char* kToyGraph = R"({"format": "dplace-graph/1", "name": "toy",
 "ops": [{"name": "a", "type": "MatMul", "kind": "forward",
          "time_s": {"gpu": 0.001, "cpu": 0.01}, "flops": 2e9, "bytes_accessed": 3e7,
          "param_bytes": 4e6, "scratch_bytes": 0, "outputs": [1000000, "1KiB"],
          "colocation": "layer1", "device_kinds": ["gpu", "cpu"]},
         {"name": "b", "kind": "backward", "colocation": "layer1"},
         {"name": "c"}],
 "edges": [{"from": "a", "to": "b", "output": 1}, {"from": "a", "to": "c"}, {"from": "b", "to": "c"}]})";

const char* kTwoGpu = R"({"format": "dplace-cluster/1", "name": "2gpu",
 "devices": [{"name": "gpu", "count": 2, "kind": "gpu", "memory": "16GiB", "peak_flops": 1.5e13,
              "memory_bandwidth": "900GB/s"},
             {"name": "host", "kind": "cpu", "memory": "64GB"}],
 "links": [{"between": ["gpu0", "gpu1"], "bandwidth": "25GB/s", "latency": "10us"}],
 "default_link": {"bandwidth": "12GB/s", "latency": "20us"}})";

TEST(GraphJsonTest, ReadsEveryFieldAndRoundTrips) {
  testing::TempDir dir;
  auto loaded = LoadGraph(dir.Write("toy.json", kToyGraph));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const graph::Graph& g = *loaded->graph;
  EXPECT_EQ(g.name(), "toy");
  EXPECT_EQ(g.num_ops(), 3);
  EXPECT_EQ(g.num_tensors(), 4);
  const graph::Op& a = g.op(graph::OpId(0));
  EXPECT_EQ(a.type, "MatMul");
  EXPECT_DOUBLE_EQ(*a.MeasuredTime("cpu"), 0.01);
  EXPECT_DOUBLE_EQ(a.flops, 2e9);
  EXPECT_DOUBLE_EQ(g.tensor(graph::TensorId(1)).bytes, 1024);
  EXPECT_EQ(g.op(graph::OpId(1)).kind, graph::OpKind::kBackward);
  EXPECT_EQ(g.op(graph::OpId(1)).colocation, a.colocation);
  EXPECT_EQ(g.edges()[0].output, 1);
  EXPECT_EQ(loaded->cluster, nullptr);

  Json written = WriteDplaceGraph(g);
  auto again = ReadDplaceGraph(JsonNode(written, "(top level)"));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(WriteDplaceGraph(*again), written);
}

// What autograd keeps and which outputs are views, as dplace.torch writes them: read, used by the
// training expansion and written back the same.
TEST(GraphJsonTest, ReadsWhatBackwardKeepsAndViews) {
  const std::string text = R"({"format": "dplace-graph/1", "name": "kept", "ops": [
      {"name": "a", "outputs": [100]},
      {"name": "v", "saves_output": false, "outputs": [{"bytes": 100, "view_of": {"op": "a"}}]},
      {"name": "w", "saves_output": false, "outputs": [{"bytes": 8, "view_of": null}]},
      {"name": "b", "saves_output": false, "saved_bytes": 7, "saved_bytes_cpu": 28,
       "outputs": [200]},
      {"name": "c", "outputs": [4]}],
    "edges": [{"from": "a", "to": "v", "saved": false}, {"from": "v", "to": "b"},
              {"from": "w", "to": "b"}, {"from": "b", "to": "c", "saved": false}]})";
  auto g = ReadDplaceGraph(JsonNode(*ParseJson(text), "kept.json"));
  ASSERT_TRUE(g.ok()) << g.status().message();
  const graph::Tensor& v = g->tensor(g->FirstOutput(graph::OpId(1)));
  EXPECT_TRUE(v.view);
  EXPECT_EQ(v.view_of, g->FirstOutput(graph::OpId(0)));
  EXPECT_TRUE(g->tensor(g->FirstOutput(graph::OpId(2))).view);
  EXPECT_EQ(g->tensor(g->FirstOutput(graph::OpId(2))).view_of, graph::TensorId(-1));
  EXPECT_FALSE(g->edges()[0].saved);
  EXPECT_TRUE(g->edges()[1].saved);
  EXPECT_DOUBLE_EQ(g->op(graph::OpId(3)).saved_bytes, 7);
  // a's output through the view v, and b's 7 inner bytes; w views a parameter: nothing.
  EXPECT_DOUBLE_EQ(graph::SavedActivationBytes(*g), 107);
  Json written = WriteDplaceGraph(*g);
  auto again = ReadDplaceGraph(JsonNode(written, "(top level)"));
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(WriteDplaceGraph(*again), written);
  // The expansion gives b one more output for its inner bytes, consumed by b/grad.
  auto train = graph::ExpandTraining(*g);
  ASSERT_TRUE(train.ok()) << train.status().message();
  const graph::Op& b = train->op(*train->FindOp("b"));
  ASSERT_EQ(b.num_outputs, 2);
  const auto consumers = train->Consumers(b.first_output + 1);
  ASSERT_EQ(consumers.size(), 1u);
  EXPECT_EQ(train->op(consumers[0]).name, "b/grad");
  EXPECT_DOUBLE_EQ(train->op(*train->FindOp("b")).saved_bytes, 0);
  // ... of 7 bytes, 28 on a CPU; written as an output object and read back the same.
  EXPECT_DOUBLE_EQ(train->tensor(b.first_output + 1).bytes, 7);
  EXPECT_DOUBLE_EQ(train->tensor(b.first_output + 1).cpu_bytes, 28);
  Json expanded = WriteDplaceGraph(*train);
  auto read = ReadDplaceGraph(JsonNode(expanded, "(top level)"));
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_DOUBLE_EQ(read->tensor(read->op(*read->FindOp("b")).first_output + 1).cpu_bytes, 28);
  EXPECT_EQ(WriteDplaceGraph(*read), expanded);
}

TEST(GraphJsonTest, ABadViewOrKeptFlagSaysWhere) {
  auto error = [](const std::string& ops) {
    auto g = ReadDplaceGraph(
        JsonNode(*ParseJson(R"({"format": "dplace-graph/1", "ops": [{"name": "a"}, )" + ops + "]}"),
                 "g.json"));
    return g.ok() ? std::string("ok") : std::string(g.status().message());
  };
  EXPECT_NE(error(R"({"name": "v", "outputs": [{"bytes": 4, "view_of": {"op": "z"}}]})")
                .find("unknown op 'z'"),
            std::string::npos);
  EXPECT_NE(error(R"({"name": "v", "outputs": [{"bytes": 4, "view": 1}]})").find("view"),
            std::string::npos);
  EXPECT_NE(error(R"({"name": "v", "saves_output": "yes"})").find("saves_output"),
            std::string::npos);
  EXPECT_NE(error(R"({"name": "v", "saved_bytes": -1})").find("saved_bytes"), std::string::npos);
  EXPECT_NE(error(R"({"name": "v", "saved_bytes_cpu": -1})").find("saved_bytes_cpu"),
            std::string::npos);
  EXPECT_NE(
      error(R"({"name": "v", "outputs": [{"bytes": 4, "cpu_bytes": "lots"}]})").find("cpu_bytes"),
      std::string::npos);
  // A view whose base does not feed it.
  EXPECT_NE(
      error(R"({"name": "v", "outputs": [{"bytes": 4, "view_of": {"op": "a"}}]})").find("base"),
      std::string::npos);
}

TEST(ClusterJsonTest, CountsGroupsAndUnits) {
  testing::TempDir dir;
  auto c = LoadCluster(dir.Write("c.json", kTwoGpu));
  ASSERT_TRUE(c.ok()) << c.status().message();
  ASSERT_EQ((*c)->num_devices(), 3);
  EXPECT_EQ((*c)->device(hw::DeviceId(1)).name, "gpu1");
  EXPECT_DOUBLE_EQ((*c)->device(hw::DeviceId(0)).memory_bytes, 16.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ((*c)->device(hw::DeviceId(2)).memory_bytes, 64e9);
  EXPECT_DOUBLE_EQ((*c)->LinkBetween(hw::DeviceId(1), hw::DeviceId(0)).bandwidth_bytes_per_s, 25e9);
  EXPECT_DOUBLE_EQ((*c)->LinkBetween(hw::DeviceId(0), hw::DeviceId(2)).latency_s, 20e-6);
}

// A 0-byte tensor pays the link's latency, unless the cluster says such transfers are free.
TEST(ClusterJsonTest, ZeroByteTransferRule) {
  testing::TempDir dir;
  const std::string base = R"({"format": "dplace-cluster/1", "devices": [
      {"name": "g", "kind": "gpu", "count": 2, "peak_flops": 1e12}],
      "default_link": {"bandwidth": "1GB/s", "latency": "100us"})";
  const graph::Tensor empty{.bytes = 0}, full{.bytes = 1e9};
  auto charged = LoadCluster(dir.Write("a.json", base + "}"));
  ASSERT_TRUE(charged.ok()) << charged.status().message();
  EXPECT_DOUBLE_EQ(
      cost::TransferTime(empty, (*charged)->LinkBetween(hw::DeviceId(0), hw::DeviceId(1))), 100e-6);
  auto free = LoadCluster(dir.Write("b.json", base + R"(, "zero_byte_transfers": "free"})"));
  ASSERT_TRUE(free.ok()) << free.status().message();
  EXPECT_DOUBLE_EQ(
      cost::TransferTime(empty, (*free)->LinkBetween(hw::DeviceId(0), hw::DeviceId(1))), 0);
  EXPECT_DOUBLE_EQ(cost::TransferTime(full, (*free)->LinkBetween(hw::DeviceId(1), hw::DeviceId(0))),
                   1 + 100e-6);
  auto bad = LoadCluster(dir.Write("c.json", base + R"(, "zero_byte_transfers": "cheap"})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("zero_byte_transfers: must be \"latency\""),
            std::string::npos)
      << bad.status().message();
}

TEST(ClusterJsonTest, EveryPresetLoads) {
  const std::vector<std::string> names = PresetNames();
  for (const char* expected : {"k80x4", "v100x8-nvlink", "a100x8", "h100x8", "hetero"}) {
    EXPECT_NE(std::find(names.begin(), names.end(), expected), names.end()) << expected;
  }
  for (const std::string& name : names) {
    auto c = LoadCluster(name);
    ASSERT_TRUE(c.ok()) << c.status().message();
    EXPECT_EQ((*c)->name(), name);
    EXPECT_GE((*c)->num_devices(), 2);
    for (const hw::Device& d : (*c)->devices()) EXPECT_GT(d.peak_flops, 0) << name;
  }
  auto k80 = LoadCluster("k80x4");
  ASSERT_TRUE(k80.ok());
  EXPECT_EQ((*k80)->num_devices(), 5);  // 4 GPUs + host CPU
}

TEST(ClusterJsonTest, NodesOfAPresetAreJoinedByItsNetwork) {
  auto c = LoadCluster("dgx-h100:2");
  ASSERT_TRUE(c.ok()) << c.status().message();
  EXPECT_EQ((*c)->num_devices(), 16);  // the accelerators of both nodes
  EXPECT_EQ((*c)->name(), "dgx-h100:2");
  const auto gpu = [&](const char* name) { return *(*c)->FindDevice(name); };
  EXPECT_DOUBLE_EQ((*c)->LinkBetween(gpu("gpu0"), gpu("gpu7")).bandwidth_bytes_per_s, 450e9);
  EXPECT_DOUBLE_EQ((*c)->LinkBetween(gpu("gpu7"), gpu("gpu8")).bandwidth_bytes_per_s, 50e9);
  auto m = LoadMachine("dgx-h100:4");
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->num_gpus(), 32);
  EXPECT_EQ(m->gpus_per_node(), 8);
  EXPECT_EQ(m->nodes(), 4);
  EXPECT_DOUBLE_EQ(m->gpu.peak_flops_fp8, 1.979e15);
  // One node of a preset without levels: its accelerators' slowest link.
  auto one = LoadMachine("a100x8");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->num_gpus(), 8);
  EXPECT_DOUBLE_EQ(one->levels[0].bandwidth_bytes_per_s, 300e9);
  // Nodes need a level between them; the op-level placers take at most 1,024 accelerators.
  EXPECT_NE(LoadMachine("a100x8:2").status().message().find("no level between nodes"),
            std::string::npos);
  EXPECT_NE(LoadCluster("dgx-a100:200").status().message().find("dplace plan"), std::string::npos);
  EXPECT_TRUE(LoadMachine("dgx-a100:200").ok());
  EXPECT_FALSE(LoadMachine("hetero").ok());  // accelerators of two classes
}

TEST(PlanJsonTest, RoundTripAndGroupFill) {
  testing::TempDir dir;
  auto g = LoadGraph(dir.Write("toy.json", kToyGraph));
  auto c = LoadCluster(dir.Write("c.json", kTwoGpu));
  ASSERT_TRUE(g.ok() && c.ok());
  // b is not listed: it follows a (same co-location group).
  auto placement = LoadPlan(dir.Write("p.json", R"({"format": "dplace-plan/1",
      "placement": {"a": "gpu1", "c": "host"}})"),
                            *g->graph, **c);
  ASSERT_TRUE(placement.ok()) << placement.status().message();
  EXPECT_EQ(*placement, (sim::OnDevices({1, 1, 2})));
  sim::Evaluation e;
  e.value = 1.5;
  Json plan = WritePlan(*g->graph, **c, *placement, e, {.placer = "test"});
  EXPECT_EQ(plan["placement"]["b"], "gpu1");
  auto reread = ReadPlan(JsonNode(plan, "(top level)"), *g->graph, **c);
  ASSERT_TRUE(reread.ok());
  EXPECT_EQ(*reread, *placement);
}

}  // namespace
}  // namespace dplace::io
