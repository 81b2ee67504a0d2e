// Every malformed or inconsistent file gives one line naming the file, the place and the problem.
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "dplace/io/load.h"
#include "dplace/io/test_files.h"

namespace dplace::io {
namespace {

struct BadGraph {
  const char* name;
  const char* content;
  const char* expected;  // substring of the message after the file name
};

const char* kCluster = R"({"format": "dplace-cluster/1", "name": "c",
  "devices": [{"name": "g", "count": 2, "kind": "gpu"}]})";
const char* kGraph = R"({"format": "dplace-graph/1", "name": "g",
  "ops": [{"name": "a", "time_s": {"gpu": 1}}, {"name": "b", "colocation": "x"}],
  "edges": [{"from": "a", "to": "b"}]})";

class BadGraphTest : public ::testing::TestWithParam<BadGraph> {};

TEST_P(BadGraphTest, OneLineNamingFilePlaceAndProblem) {
  testing::TempDir dir;
  const std::string path = dir.Write(std::string(GetParam().name) + ".json", GetParam().content);
  auto g = LoadGraph(path);
  ASSERT_FALSE(g.ok());
  EXPECT_EQ(g.status().code(), StatusCode::kInvalidInput);
  const std::string& m = g.status().message();
  EXPECT_EQ(m.rfind(path + ": ", 0), 0u) << m;
  EXPECT_NE(m.find(GetParam().expected), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

INSTANTIATE_TEST_SUITE_P(
    Files, BadGraphTest,
    ::testing::Values(
        BadGraph{"truncated", R"({"format": "dplace-graph/1", "ops": [{"name": "a")",
                 "invalid JSON: unexpected end of file"},
        BadGraph{"invalid", "{\"format\": \"dplace-graph/1\",\n \"ops\": [}", "line 2, column 10"},
        BadGraph{"empty", "", "file is empty"},
        BadGraph{"missing_ops", R"({"format": "dplace-graph/1"})", "missing field 'ops'"},
        BadGraph{"missing_name", R"({"format": "dplace-graph/1", "ops": [{"type": "X"}]})",
                 "ops[0]: missing field 'name'"},
        BadGraph{"unknown_op",
                 R"({"format": "dplace-graph/1", "ops": [{"name": "a"}],
                    "edges": [{"from": "a", "to": "zz"}]})",
                 "edges[0].to: unknown op 'zz'"},
        BadGraph{"cycle",
                 R"({"format": "dplace-graph/1", "ops": [{"name": "a"}, {"name": "b"}],
                    "edges": [{"from": "a", "to": "b"}, {"from": "b", "to": "a"}]})",
                 "graph has a cycle: "},
        BadGraph{"negative",
                 R"({"format": "dplace-graph/1", "ops": [{"name": "a", "time_s": {"gpu": -1}}]})",
                 "ops[0].time_s.gpu: must not be negative (got -1)"},
        BadGraph{"bad_kind", R"({"format": "dplace-graph/1", "ops": [{"name": "a", "kind": "x"}]})",
                 "ops[0].kind: must be forward, backward or update"},
        BadGraph{"no_kinds",
                 R"({"format": "dplace-graph/1", "ops": [{"name": "a", "device_kinds": []}]})",
                 "ops[0].device_kinds: lists no device kind"},
        BadGraph{"bad_output",
                 R"({"format": "dplace-graph/1", "ops": [{"name": "a"}, {"name": "b"}],
                    "edges": [{"from": "a", "to": "b", "output": 2}]})",
                 "has no output 2"},
        BadGraph{"duplicate",
                 R"({"format": "dplace-graph/1", "ops": [{"name": "a"}, {"name": "a"}]})",
                 "ops[1]: duplicate op name 'a'"},
        BadGraph{"not_a_graph", R"([1, 2, 3])", "not a graph"},
        BadGraph{"paper_missing_field",
                 R"({"maxFPGAs": 2, "maxCPUs": 1, "nodes": [{"id": 1, "supportedOnFpga": 1,
                    "cpuLatency": 1, "isBackwardNode": 0}], "edges": []})",
                 "nodes[0]: missing field 'fpgaLatency'"},
        BadGraph{"paper_unknown_node",
                 R"({"maxFPGAs": 2, "maxCPUs": 1, "nodes": [{"id": 1, "supportedOnFpga": 1,
                    "cpuLatency": 1, "fpgaLatency": 1, "isBackwardNode": 0}],
                    "edges": [{"sourceId": 1, "destId": 7, "cost": 1}]})",
                 "edges[0].destId: no node with id 7"},
        BadGraph{"paper_costs_differ",
                 R"({"maxFPGAs": 2, "maxCPUs": 1, "nodes": [], "edges": [
                    {"sourceId": 1, "destId": 2, "cost": 1}, {"sourceId": 1, "destId": 3, "cost": 2}]})",
                 "edges[1].cost: node 1 has out-edges with different costs"},
        BadGraph{"paper_unknown_key",
                 R"({"maxFPGAs": 2, "maxCPUs": 1, "nodes": [{"id": 1, "supportedOnFpga": 1,
                    "cpuLatency": 1, "fpgaLatncy": 1, "isBackwardNode": 0}], "edges": []})",
                 "nodes[0]: unknown key 'fpgaLatncy' (did you mean 'fpgaLatency'?)"},
        BadGraph{"paper_unknown_root_key",
                 R"({"maxFPGAs": 2, "maxCPUs": 1, "maxSizePerFPGa": 9, "nodes": [], "edges": []})",
                 "unknown key 'maxSizePerFPGa' (did you mean 'maxSizePerFPGA'?)"},
        BadGraph{"piper_unknown_key",
                 R"({"maxDevices": 2, "maxMemoryPerDevice": 1e9, "bandwidth": 1e9, "mbsInBatch": 1,
                    "nodes": [{"id": 1, "TMPCs": {"1": [{"id": "vanilla", "timePerSample": 1,
                    "memoryUsageA": 0, "memoryUsageB": 0, "timePerSampel": 2}]}}], "edges": []})",
                 "unknown key 'timePerSampel' (did you mean 'timePerSample'?)"},
        BadGraph{"baechi_unknown_key",
                 R"({"nodes": [{"id": 0, "name": "a", "compute_time_us": {"gpu": 1},
                    "colocaton": []}], "edges": []})",
                 "nodes[0]: unknown key 'colocaton' (did you mean 'colocation'?)"},
        BadGraph{"paper_negative",
                 R"({"maxFPGAs": 2, "maxCPUs": 1, "nodes": [{"id": 1, "supportedOnFpga": 1,
                    "cpuLatency": 1, "fpgaLatency": -3, "isBackwardNode": 0}], "edges": []})",
                 "nodes[0].fpgaLatency: must not be negative"}),
    [](const auto& test) { return std::string(test.param.name); });

TEST(BadInputTest, RandomBytesAreRejectedCleanly) {
  testing::TempDir dir;
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::string bytes(static_cast<size_t>(1 + rng() % 2000), '\0');
    for (char& ch : bytes) ch = static_cast<char>(rng() & 0xff);
    const std::string path = dir.Write("random" + std::to_string(trial), bytes);
    auto g = LoadGraph(path);
    ASSERT_FALSE(g.ok());
    EXPECT_EQ(g.status().message().rfind(path + ": ", 0), 0u);
    EXPECT_FALSE(LoadCluster(path).ok());
  }
}

TEST(BadInputTest, UnreadableFiles) {
  testing::TempDir dir;
  EXPECT_EQ(LoadGraph(dir.Path("absent.json")).status().message(),
            dir.Path("absent.json") + ": no such file");
  EXPECT_EQ(LoadGraph(dir.Path("")).status().code(), StatusCode::kInvalidInput);
  auto c = LoadCluster(dir.Path("nope.json"));
  EXPECT_NE(c.status().message().find("presets: "), std::string::npos) << c.status().message();
}

TEST(BadInputTest, BadClusters) {
  testing::TempDir dir;
  const std::pair<const char*, const char*> cases[] = {
      {R"({"format": "dplace-cluster/1", "devices": [{"name": "g"}]})",
       "devices[0]: missing field 'kind'"},
      {R"({"format": "dplace-cluster/1", "devices": [{"name": "g", "kind": "gpu", "memory": "16XB"}]})",
       "devices[0].memory: '16XB' is not a valid size"},
      {R"({"format": "dplace-cluster/1", "devices": [{"name": "g", "kind": "gpu"}],
          "links": [{"between": ["g", "h"], "bandwidth": "1GB/s"}]})",
       "links[0].between[1]: unknown device 'h'"},
      {R"({"format": "dplace-cluster/1", "devices": []})", "devices: lists no device"},
      {R"({"format": "dplace-graph/1", "ops": []})", "not a cluster"},
  };
  for (const auto& [content, expected] : cases) {
    const std::string path = dir.Write("c.json", content);
    auto c = LoadCluster(path);
    ASSERT_FALSE(c.ok()) << content;
    EXPECT_NE(c.status().message().find(path + ": "), std::string::npos) << c.status().message();
    EXPECT_NE(c.status().message().find(expected), std::string::npos) << c.status().message();
  }
}

TEST(BadInputTest, BadPlans) {
  testing::TempDir dir;
  auto g = LoadGraph(dir.Write("g.json", kGraph));
  auto c = LoadCluster(dir.Write("c.json", kCluster));
  ASSERT_TRUE(g.ok() && c.ok());
  const std::pair<const char*, const char*> cases[] = {
      {R"({"format": "dplace-plan/1", "placement": {"a": "g0", "zz": "g1"}})",
       "placement.zz: unknown op 'zz'"},
      {R"({"format": "dplace-plan/1", "placement": {"a": "g0", "b": "tpu9"}})",
       "placement.b: unknown device 'tpu9'"},
      {R"({"format": "dplace-plan/1", "placement": {"a": "g0"}})",
       "op 'b' is not placed, and no op of its co-location group is"},
      {R"({"fpgas": [{"nodes": [0]}, {"nodes": [1]}, {"nodes": [5]}], "cpus": []})",
       "fpgas[2]: the cluster has only 2 accelerators"},
      {R"({"fpgas": [{"nodes": [0, 0]}]})", "fpgas[0].nodes[1]: node 0 is placed twice"},
      {R"({"hello": 1})", "not a plan"},
      {R"({"format": "dplace-plan/1", "placment": {}, "placement": {"a": "g0"}})",
       "unknown key 'placment' (did you mean 'placement'?)"},
      {R"({"fpgas": [{"nodes": [0], "lod": 1}]})",
       "fpgas[0]: unknown key 'lod' (did you mean 'load'?)"},
  };
  for (const auto& [content, expected] : cases) {
    const std::string path = dir.Write("p.json", content);
    auto p = LoadPlan(path, *g->graph, **c);
    ASSERT_FALSE(p.ok()) << content;
    EXPECT_NE(p.status().message().find(path + ": "), std::string::npos) << p.status().message();
    EXPECT_NE(p.status().message().find(expected), std::string::npos) << p.status().message();
  }
}

}  // namespace
}  // namespace dplace::io
