// A seeded mutation fuzzer over every importer: graphs (dplace JSON, the NeurIPS 2020 paper's
// JSON, PipeDream profiles, Piper's and Baechi's JSON, ONNX), clusters and plans.
//
// Each input is a real file of testdata/ mutated (bytes flipped, cut, repeated or inserted; numbers
// swapped for extreme ones; ONNX attributes, inputs, ranks and opsets rewritten in the protobuf),
// written to a temporary file and read the way `dplace` reads it; what loads is then placed (heft,
// m_etf) and simulated. An input passes when every step ends in a result or a bad-input Status:
// an internal error, a sanitizer report or a signal is a finding, and an input that takes more
// than --hang-seconds is a hang. The regression inputs in testdata/fuzz/ run first, every time.
//
//   import_fuzz [--inputs N] [--seconds S] [--seed K] [--hang-seconds H]
// Prints per importer the inputs run and how they ended; exits 1 on any finding.
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "dplace/base/file_util.h"
#include "dplace/base/json_node.h"
#include "dplace/io/load.h"
#include "dplace/registry/registry.h"
#include "dplace/sim/evaluator.h"
#include "fuzz_flags.h"

namespace {

namespace fs = std::filesystem;
using dplace::Status;
using dplace::StatusCode;

enum class Kind { kGraph, kCluster, kPlan };

struct Seed {
  std::string importer;  // "paper", "onnx", ... for the report
  Kind kind;
  std::string extension;
  std::string bytes;
  std::string graph;  // plans: the graph they place ("": testdata/fuzz/seeds/graph.json on k80x4)
};

std::string Slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Seed> Seeds(const fs::path& root) {
  std::vector<Seed> seeds;
  auto add = [&](const std::string& importer, Kind kind, const fs::path& p) {
    seeds.push_back({importer, kind, p.extension().string(), Slurp(p)});
  };
  const fs::path t = root / "testdata";
  add("paper", Kind::kGraph,
      t / "dnn-partitioning/throughput-inputs/LayerGraphs/resnet50_inference.json");
  add("paper", Kind::kGraph,
      t / "dnn-partitioning/latency-inputs/LayerGraphs/bert24_inference.json");
  add("pipedream", Kind::kGraph, t / "pipedream-profiles/alexnet.graph.txt");
  add("pipedream", Kind::kGraph, t / "pipedream-profiles/vgg16.graph.txt");
  add("piper", Kind::kGraph, t / "piper/resnet.json");
  add("onnx", Kind::kGraph, t / "onnx/lstm_opset13.onnx");
  add("onnx", Kind::kGraph, t / "onnx/transformer_opset17.onnx");
  add("onnx", Kind::kGraph, root / "models/vgg16.onnx");
  add("dplace-graph", Kind::kGraph, t / "fuzz/seeds/graph.json");
  add("baechi", Kind::kGraph, t / "fuzz/seeds/baechi.json");
  add("cluster", Kind::kCluster, root / "clusters/k80x4.json");
  add("cluster", Kind::kCluster, root / "clusters/v100x8-nvlink.json");
  add("plan", Kind::kPlan, t / "fuzz/seeds/plan.json");
  add("paper-split", Kind::kPlan,
      t / "dnn-partitioning/human-experts/resnet50_inference_expert.json");
  seeds.back().graph =
      (t / "dnn-partitioning/throughput-inputs/LayerGraphs/resnet50_inference.json").string();
  return seeds;
}

const char* kNumbers[] = {"0",     "-1",         "-5",   "1e308",      "1e-300",
                          "1e999", "-1e999",     "NaN",  "4294967296", "99999999999999999999999",
                          "0.5",   "\"x\"",      "null", "[]",         "{}",
                          "true",  "2000000000", "-0"};

class Mutator {
 public:
  explicit Mutator(uint64_t seed) : rng_(seed) {}

  std::string Mutate(const Seed& seed) {
    if (seed.extension == ".onnx" && Chance(2)) return MutateOnnx(seed.bytes);
    std::string s = seed.bytes;
    const int rounds = 1 + static_cast<int>(Below(4));
    for (int r = 0; r < rounds && !s.empty(); ++r) {
      switch (Below(seed.extension == ".onnx" ? 5 : 7)) {
        case 0:  // flip a bit
          s[Below(s.size())] ^= static_cast<char>(1 << Below(8));
          break;
        case 1: {  // cut a range
          const size_t at = Below(s.size());
          s.erase(at, Below(std::min<size_t>(64, s.size() - at) + 1));
          break;
        }
        case 2: {  // repeat a range
          const size_t at = Below(s.size());
          s.insert(at, s.substr(at, Below(64) + 1));
          break;
        }
        case 3:  // truncate
          s.resize(Below(s.size()));
          break;
        case 4:  // a random byte, control characters and escapes included
          s[Below(s.size())] = static_cast<char>(Below(256));
          break;
        default:  // a number (or a value) for another
          ReplaceNumber(s);
      }
    }
    return s;
  }

 private:
  bool Chance(uint64_t n) { return Below(n) == 0; }
  uint64_t Below(uint64_t n) { return n == 0 ? 0 : rng_() % n; }

  void ReplaceNumber(std::string& s) {
    for (int tries = 0; tries < 16; ++tries) {
      size_t at = Below(s.size());
      while (at < s.size() && !(std::isdigit(static_cast<unsigned char>(s[at])))) ++at;
      if (at >= s.size()) continue;
      size_t end = at;
      while (end < s.size() && (std::isdigit(static_cast<unsigned char>(s[end])) || s[end] == '.' ||
                                s[end] == 'e' || s[end] == '-' || s[end] == '+')) {
        ++end;
      }
      s.replace(at, end - at, kNumbers[Below(std::size(kNumbers))]);
      return;
    }
  }

  // Structured: parse the model, rewrite what shape inference reads, serialize.
  std::string MutateOnnx(const std::string& bytes) {
    onnx::ModelProto m;
    if (!m.ParseFromString(bytes) || m.graph().node_size() == 0) return bytes;
    onnx::GraphProto* g = m.mutable_graph();
    const int rounds = 1 + static_cast<int>(Below(3));
    for (int r = 0; r < rounds; ++r) {
      onnx::NodeProto* node =
          g->mutable_node(static_cast<int>(Below(static_cast<uint64_t>(g->node_size()))));
      switch (Below(7)) {
        case 0:  // an attribute's integers
          if (node->attribute_size() > 0) {
            auto* a = node->mutable_attribute(
                static_cast<int>(Below(static_cast<uint64_t>(node->attribute_size()))));
            const int64_t values[] = {0, -1, -7, 1, 3, 1 << 30};
            a->set_i(values[Below(6)]);
            for (int k = 0; k < a->ints_size(); ++k) a->set_ints(k, values[Below(6)]);
          }
          break;
        case 1:  // an input dropped or emptied
          if (node->input_size() > 0) {
            if (Chance(2)) {
              node->mutable_input()->RemoveLast();
            } else {
              node->set_input(static_cast<int>(Below(static_cast<uint64_t>(node->input_size()))),
                              "");
            }
          }
          break;
        case 2: {  // another op type
          const char* types[] = {"Shape", "LSTM",    "GRU",     "RNN",    "ConvTranspose",
                                 "Conv",  "MaxPool", "Reshape", "Gather", "If",
                                 "Loop",  "Resize",  "Einsum",  "TopK"};
          node->set_op_type(types[Below(std::size(types))]);
          break;
        }
        case 3:  // the default opset
          if (m.opset_import_size() > 0) {
            const int64_t versions[] = {0, 1, 7, 13, 17, 18, 10000, -3};
            m.mutable_opset_import(0)->set_version(versions[Below(8)]);
          }
          break;
        case 4:  // a graph input's rank or a dimension
          if (g->input_size() > 0) {
            auto* shape =
                g->mutable_input(static_cast<int>(Below(static_cast<uint64_t>(g->input_size()))))
                    ->mutable_type()
                    ->mutable_tensor_type()
                    ->mutable_shape();
            if (shape->dim_size() > 0 && Chance(2)) {
              shape->mutable_dim(static_cast<int>(Below(static_cast<uint64_t>(shape->dim_size()))))
                  ->set_dim_value(static_cast<int64_t>(Below(3)) - 1);
            } else if (shape->dim_size() > 0) {
              shape->mutable_dim()->RemoveLast();
            }
          }
          break;
        case 5:  // an output renamed onto another tensor (two producers), or an input onto one
          if (node->output_size() > 0 && g->node_size() > 1) {
            const auto& other =
                g->node(static_cast<int>(Below(static_cast<uint64_t>(g->node_size()))));
            if (other.output_size() > 0) node->set_output(0, other.output(0));
          }
          break;
        default:  // an initializer's dims
          if (g->initializer_size() > 0) {
            auto* t = g->mutable_initializer(
                static_cast<int>(Below(static_cast<uint64_t>(g->initializer_size()))));
            if (t->dims_size() > 0) t->mutable_dims()->RemoveLast();
          }
      }
    }
    return m.SerializeAsString();
  }

  std::mt19937_64 rng_;
};

struct Tally {
  int64_t inputs = 0, loaded = 0, rejected = 0, findings = 0;
};

// Runs one input; returns "" or what went wrong.
std::string RunOne(const Seed& seed, const std::string& bytes, const fs::path& file,
                   const std::shared_ptr<const dplace::graph::Graph>& small_graph,
                   const std::shared_ptr<const dplace::hw::Cluster>& k80, bool* loaded) {
  {
    std::ofstream out(file, std::ios::binary | std::ios::trunc);
    out << bytes;
  }
  auto bad = [](const Status& s) {
    return s.code() == StatusCode::kInvalidInput ? "" : "internal error: " + s.message();
  };
  std::shared_ptr<const dplace::graph::Graph> graph = small_graph;
  std::shared_ptr<const dplace::hw::Cluster> cluster = k80;
  if (!seed.graph.empty()) {
    auto g = dplace::io::LoadGraph(seed.graph);
    if (!g.ok()) return "the plan's graph does not load: " + g.status().message();
    graph = g->graph;
    if (g->cluster) cluster = g->cluster;
  }
  switch (seed.kind) {
    case Kind::kGraph: {
      auto g = dplace::io::LoadGraph(file.string());
      if (!g.ok()) return bad(g.status());
      graph = g->graph;
      if (g->cluster) cluster = g->cluster;
      break;
    }
    case Kind::kCluster: {
      auto c = dplace::io::LoadCluster(file.string());
      if (!c.ok()) return bad(c.status());
      cluster = *c;
      break;
    }
    case Kind::kPlan:
      break;
  }
  auto made = dplace::sim::MakeProblem(graph, cluster, dplace::sim::Objective::kStep,
                                       dplace::cost::RooflineCostModel(),
                                       dplace::sim::MissingDevice::kBadInput);
  if (!made.ok()) return bad(made.status());
  const auto problem = std::make_shared<const dplace::sim::Problem>(std::move(made).value());
  if (seed.kind == Kind::kPlan) {
    auto p = dplace::io::LoadPlan(file.string(), problem->g(), problem->c());
    if (!p.ok()) return bad(p.status());
    *loaded = true;
    const auto evaluator = dplace::sim::MakeEvaluator(problem);
    evaluator->Evaluate(*p);
    return "";
  }
  *loaded = true;
  if (problem->num_ops() > 3000) return "";  // placing large graphs is the benchmarks' job
  for (const char* name : {"heft", "m_etf"}) {
    auto placer = dplace::place::MakePlacer(name);
    const auto evaluator = dplace::sim::MakeEvaluator(problem);
    auto placed = placer->placer->Place(
        *problem,
        {.evaluator = evaluator.get(), .seed = 1, .limits = {.evaluations = 100, .seconds = 1}});
    if (!placed.ok()) return bad(placed.status());
    evaluator->Evaluate(placed->placement);
  }
  return "";
}

}  // namespace

int main(int argc, char** argv) {
  const FuzzFlags flags = ReadFuzzFlags(argc, argv);
  const fs::path root = DPLACE_SOURCE_DIR;
  const std::vector<Seed> seeds = Seeds(root);
  const fs::path dir = fs::temp_directory_path() / ("dplace_fuzz_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto small = dplace::io::LoadGraph((root / "testdata/fuzz/seeds/graph.json").string());
  auto k80 = dplace::io::LoadCluster("k80x4");
  if (!small.ok() || !k80.ok()) {
    std::cerr << "import_fuzz: cannot load the fixed graph or cluster\n";
    return 1;
  }
  std::map<std::string, Tally> tally;
  int64_t findings = 0, hangs = 0;
  auto run = [&](const Seed& s, const std::string& bytes, const std::string& label) {
    const fs::path file = dir / ("input" + s.extension);
    bool loaded = false;
    const auto start = std::chrono::steady_clock::now();
    const std::string problem = RunOne(s, bytes, file, small->graph, *k80, &loaded);
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    Tally& t = tally[s.importer];
    ++t.inputs;
    (loaded ? t.loaded : t.rejected) += 1;
    if (!problem.empty() || took > flags.hang_seconds) {
      ++t.findings;
      ++(problem.empty() ? hangs : findings);
      const fs::path keep =
          dir.parent_path() / ("dplace_finding_" + std::to_string(findings + hangs) + s.extension);
      std::ofstream(keep, std::ios::binary) << bytes;
      std::cerr << label << ": "
                << (problem.empty() ? "took " + std::to_string(took) + " s" : problem)
                << " (input kept as " << keep.string() << ")\n";
    }
  };
  // Regression inputs first: testdata/fuzz/<importer>/<case>.
  for (const auto& entry : fs::recursive_directory_iterator(root / "testdata/fuzz/regressions")) {
    if (!entry.is_regular_file()) continue;
    const std::string importer = entry.path().parent_path().filename().string();
    const Kind kind = importer == "cluster" ? Kind::kCluster
                      : importer == "plan"  ? Kind::kPlan
                                            : Kind::kGraph;
    run({importer, kind, entry.path().extension().string(), ""}, Slurp(entry.path()),
        entry.path().string());
  }
  Mutator mutator(flags.seed);
  std::mt19937_64 pick(flags.seed + 1);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < flags.inputs; ++i) {
    if (flags.seconds > 0 &&
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() >
            flags.seconds) {
      break;
    }
    const Seed& s = seeds[pick() % seeds.size()];
    run(s, mutator.Mutate(s), "input " + std::to_string(i) + " (" + s.importer + ")");
  }
  fs::remove_all(dir);
  int64_t total = 0;
  for (const auto& [importer, t] : tally) {
    std::cout << importer << ": " << t.inputs << " inputs, " << t.loaded << " loaded, "
              << t.rejected << " rejected as bad input, " << t.findings << " findings\n";
    total += t.inputs;
  }
  std::cout << total << " inputs, " << findings << " findings, " << hangs << " hangs\n";
  return findings + hangs == 0 ? 0 : 1;
}
