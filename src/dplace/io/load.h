// Loading any supported file with its format detected from the content, and errors that always
// start with the file name: "<file>: <place>: <problem>".
//   graphs:   dplace-graph/1, the paper's input JSON and Piper's input JSON (both also define a
//             cluster), PipeDream's graph.txt profiles, Baechi's profile JSON, ONNX models (by
//             the .onnx extension)
//   clusters: dplace-cluster/1, or a bundled preset name (k80x4, ...)
//   plans:    dplace-plan/1, the paper's split JSON
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/precision.h"
#include "dplace/hw/cluster.h"
#include "dplace/hw/machine.h"
#include "dplace/io/onnx/model.h"
#include "dplace/job/transformer.h"
#include "dplace/sim/problem.h"

namespace dplace::io {

enum class GraphFormat { kDplace, kPaper, kPipeDream, kPiper, kBaechi, kOnnx };

struct LoadedGraph {
  std::shared_ptr<const graph::Graph> graph;
  std::shared_ptr<const hw::Cluster> cluster;  // set when the file defines the machine (paper)
  GraphFormat format = GraphFormat::kDplace;
  std::vector<std::string> warnings;  // for the user, one line each (e.g. ONNX op types)
  // The precision the graph's bytes are in: the ONNX model's float type, else fp32.
  graph::Precision precision = graph::Precision::kFp32;
  // The batch size, where the format says it (an ONNX model: its first data input's first
  // dimension); 0 when unknown.
  int64_t batch = 0;
};

// `shapes` fixes an ONNX model's input sizes (InputShapes); for other formats it must be empty.
StatusOr<LoadedGraph> LoadGraph(const std::string& path, const InputShapes& shapes = {});

// `spec` is a preset name or a file path.
StatusOr<std::shared_ptr<const hw::Cluster>> LoadCluster(const std::string& spec);
// The machine of a cluster spec as the job planner sees it (hw/machine.h, io::ReadMachine): a
// preset's name or a dplace-cluster/1 file, NAME:N for N nodes of it (as LoadCluster takes it).
StatusOr<hw::Machine> LoadMachine(const std::string& spec);
// A Hugging Face config.json as the job planner's layer model (io/model_config.h).
StatusOr<job::Transformer> LoadModelConfig(const std::string& path);
// Whether `path` is a readable model config (a small JSON object with "model_type").
bool IsModelConfigFile(const std::string& path);
// Whether `path` names a graph LoadGraph reads, by its name (an .onnx file, gen:...) or its
// content (dplace-graph/1, the paper's, Piper's or Baechi's JSON, a PipeDream profile); false for
// an unreadable file.
bool IsGraphFile(const std::string& path);

StatusOr<sim::Placement> LoadPlan(const std::string& path, const graph::Graph& g,
                                  const hw::Cluster& c);

// The same for a document held in memory (what the Python module passes): `name` stands for the
// file in messages and, where the format has none, names the graph. Graphs: the JSON formats and
// PipeDream profiles (not ONNX).
StatusOr<LoadedGraph> LoadGraphText(const std::string& name, const std::string& text);
StatusOr<std::shared_ptr<const hw::Cluster>> LoadClusterText(const std::string& name,
                                                             const std::string& text);
StatusOr<sim::Placement> LoadPlanText(const std::string& name, const std::string& text,
                                      const graph::Graph& g, const hw::Cluster& c);

// The file's stem: "a/b/bert24_training.json" -> "bert24_training".
std::string FileStem(const std::string& path);

}  // namespace dplace::io
