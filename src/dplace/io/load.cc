#include "dplace/io/load.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <filesystem>
#include <optional>

#include "dplace/base/json_node.h"
#include "dplace/base/spelling.h"
#include "dplace/base/units.h"
#include "dplace/graph/families.h"
#include "dplace/io/cluster_json.h"
#include "dplace/io/graph_json.h"
#include "dplace/io/model_config.h"
#include "dplace/io/onnx/file.h"
#include "dplace/io/onnx/model.h"
#include "dplace/io/paper_json.h"
#include "dplace/io/plan_json.h"
#include "dplace/io/profiles.h"

namespace dplace::io {
namespace {

const char* kRoot = "(top level)";

StatusOr<Json> ReadJsonFile(const std::string& path) {
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  if (text.empty()) return InvalidInput("file is empty");
  return ParseJson(text);
}

std::string FormatOf(const Json& j) {
  if (j.is_object() && j.contains("format") && j["format"].is_string()) return j["format"];
  return "";
}

// "gen:FAMILY:SEED:INDEX": graph INDEX of a generated family (graph/families.h), made here.
StatusOr<LoadedGraph> Generated(const std::string& path) {
  std::vector<std::string> parts;
  for (size_t at = 0, next; at <= path.size(); at = next + 1) {
    next = path.find(':', at);
    if (next == std::string::npos) next = path.size();
    parts.push_back(path.substr(at, next - at));
  }
  // SEED: 0 .. 2^64 - 1; INDEX: 0 .. 2^31 - 1 (a graph's index within its family). strtoull
  // takes a sign and wraps, so only digits are numbers here.
  auto number = [](const std::string& text, unsigned long long max) -> std::optional<uint64_t> {
    if (text.empty() || text.size() > 20 ||
        !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      return std::nullopt;
    }
    errno = 0;
    const unsigned long long v = std::strtoull(text.c_str(), nullptr, 10);
    if (errno == ERANGE || v > max) return std::nullopt;
    return static_cast<uint64_t>(v);
  };
  const auto seed = parts.size() == 4 ? number(parts[2], ULLONG_MAX) : std::nullopt;
  const auto index = parts.size() == 4 ? number(parts[3], INT_MAX) : std::nullopt;
  if (!seed || !index) {
    return InvalidInput(
        "a generated graph is gen:FAMILY:SEED:INDEX (SEED 0 to 2^64-1, INDEX 0 to 2147483647)");
  }
  DPLACE_ASSIGN_OR_RETURN(graph::Graph g,
                          graph::GenerateGraph(parts[1], *seed, static_cast<int>(*index)));
  LoadedGraph out;
  out.graph = std::make_shared<const graph::Graph>(std::move(g));
  return out;
}

// `held`: the document's text when it is not read from `path` (which then only names it).
StatusOr<LoadedGraph> LoadGraphUnprefixed(const std::string& path, const InputShapes& shapes,
                                          const std::string* held = nullptr) {
  if (held == nullptr && path.starts_with("gen:")) return Generated(path);
  LoadedGraph out;
  if (held == nullptr && path.ends_with(".onnx")) {
    DPLACE_ASSIGN_OR_RETURN(const OnnxFile file, ReadOnnxFile(path));
    if (file.model.empty()) return InvalidInput("file is empty");
    DPLACE_ASSIGN_OR_RETURN(OnnxGraph onnx,
                            ReadOnnxModel(file.model, FileStem(path), shapes, &file.ties));
    out.graph = std::make_shared<const graph::Graph>(std::move(onnx.graph));
    out.format = GraphFormat::kOnnx;
    out.warnings = std::move(onnx.warnings);
    out.precision = onnx.precision;
    out.batch = onnx.batch;
    return out;
  }
  std::string text;
  if (held == nullptr) {
    DPLACE_ASSIGN_OR_RETURN(text, ReadFile(path));
  } else {
    text = *held;
  }
  if (text.empty()) return InvalidInput("file is empty");
  if (!shapes.empty()) return InvalidInput("fixed input sizes apply to ONNX models only");
  if (IsPipeDreamProfile(text)) {
    DPLACE_ASSIGN_OR_RETURN(graph::Graph g, ReadPipeDreamProfile(text, FileStem(FileStem(path))));
    out.graph = std::make_shared<const graph::Graph>(std::move(g));
    out.format = GraphFormat::kPipeDream;
    return out;
  }
  DPLACE_ASSIGN_OR_RETURN(Json j, ParseJson(text));
  JsonNode root(j, kRoot);
  const std::string format = FormatOf(j);
  if (format == "dplace-graph/1") {
    DPLACE_ASSIGN_OR_RETURN(graph::Graph g, ReadDplaceGraph(root));
    out.graph = std::make_shared<const graph::Graph>(std::move(g));
    if (auto batch = root.OptionalField("batch")) {
      DPLACE_ASSIGN_OR_RETURN(out.batch, batch->Integer());
      if (out.batch < 1 || out.batch > (int64_t{1} << 40)) {
        return batch->Error("must be a batch size from 1 to 2^40");
      }
    }
    return out;
  }
  if (IsBaechiProfile(j)) {
    DPLACE_ASSIGN_OR_RETURN(graph::Graph g, ReadBaechiProfile(root, FileStem(path)));
    out.graph = std::make_shared<const graph::Graph>(std::move(g));
    out.format = GraphFormat::kBaechi;
    return out;
  }
  const bool paper = IsPaperInput(j);
  if (paper || IsPiperInput(j)) {
    DPLACE_ASSIGN_OR_RETURN(GraphWithMachine inst, paper ? ReadPaperInput(root, FileStem(path))
                                                         : ReadPiperInput(root, FileStem(path)));
    out.graph = std::make_shared<const graph::Graph>(std::move(inst.graph));
    out.cluster = std::make_shared<const hw::Cluster>(std::move(inst.cluster));
    out.format = paper ? GraphFormat::kPaper : GraphFormat::kPiper;
    return out;
  }
  if (!format.empty()) return InvalidInput("format '" + format + "' is not a graph format");
  return InvalidInput(
      "not a graph: expected dplace-graph/1 JSON, the NeurIPS 2020 paper's input JSON, Piper's "
      "input JSON, Baechi's profile JSON or a PipeDream graph.txt profile");
}

// Runs an importer, turning what nlohmann's accessors throw on ill-typed input (a reader that
// slipped past JsonNode) into bad input instead of an internal error.
template <typename F>
auto Guarded(F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (const Json::exception& e) {
    std::string what = e.what();
    if (const size_t close = what.find("] "); close != std::string::npos) {
      what = what.substr(close + 2);
    }
    return InvalidInput("malformed JSON value: " + what);
  }
}

}  // namespace

std::string FileStem(const std::string& path) {
  return std::filesystem::path(path).stem().string();
}

StatusOr<LoadedGraph> LoadGraph(const std::string& path, const InputShapes& shapes) {
  auto loaded = Guarded([&] { return LoadGraphUnprefixed(path, shapes); });
  if (!loaded.ok()) return loaded.status().WithContext(path);
  return loaded;
}

StatusOr<LoadedGraph> LoadGraphText(const std::string& name, const std::string& text) {
  auto loaded = Guarded([&] { return LoadGraphUnprefixed(name, {}, &text); });
  if (!loaded.ok()) return loaded.status().WithContext(name);
  return loaded;
}

namespace {

StatusOr<Json> ParseClusterJson(const std::string& text) {
  if (text.empty()) return InvalidInput("file is empty");
  DPLACE_ASSIGN_OR_RETURN(Json j, ParseJson(text));
  if (FormatOf(j) != "dplace-cluster/1") {
    return InvalidInput("not a cluster: expected \"format\": \"dplace-cluster/1\"");
  }
  return j;
}

StatusOr<std::shared_ptr<const hw::Cluster>> ParseCluster(const std::string& label,
                                                          const std::string& text, int nodes = 0) {
  auto parse = [&]() -> StatusOr<hw::Cluster> {
    DPLACE_ASSIGN_OR_RETURN(Json j, ParseClusterJson(text));
    return ReadCluster(JsonNode(j, kRoot), nodes);
  };
  auto cluster = Guarded(parse);
  if (!cluster.ok()) return cluster.status().WithContext(label);
  return std::make_shared<const hw::Cluster>(std::move(cluster).value());
}

StatusOr<sim::Placement> ParsePlan(const Json& j, const graph::Graph& g, const hw::Cluster& c) {
  JsonNode root(j, kRoot);
  if (IsDplacePlan(j)) return ReadPlan(root, g, c);
  if (IsPaperSplit(j)) return ReadPaperSplit(root, g, c);
  return InvalidInput("not a plan: expected dplace-plan/1 JSON or the paper's split JSON");
}

}  // namespace

StatusOr<std::shared_ptr<const hw::Cluster>> LoadClusterText(const std::string& name,
                                                             const std::string& text) {
  return ParseCluster(name, text);
}

namespace {

// A cluster spec's text and label: a preset's name or a file, NAME:N for N nodes of it.
struct ClusterSource {
  std::string text, label;
  int nodes = 0;  // 0: the file's own
};

StatusOr<ClusterSource> ReadClusterSource(std::string spec) {
  ClusterSource source;
  if (const size_t colon = spec.rfind(':');
      colon != std::string::npos && colon + 1 < spec.size() &&
      spec.find_first_not_of("0123456789", colon + 1) == std::string::npos) {
    const std::string count = spec.substr(colon + 1);
    if (count.size() > 5 || std::stoi(count) < 1 || std::stoi(count) > kMaxNodes) {
      return InvalidInput(spec + ": the number of nodes must be between 1 and " +
                          std::to_string(kMaxNodes));
    }
    source.nodes = std::stoi(count);
    spec.resize(colon);
  }
  std::string& text = source.text;
  std::string& label = source.label;
  label = spec;
  if (auto preset = PresetText(spec); preset.ok()) {
    text = *preset;
    label = "preset " + spec;
  } else {
    auto file = ReadFile(spec);
    if (!file.ok()) {
      std::string names;
      for (const std::string& n : PresetNames()) names += (names.empty() ? "" : ", ") + n;
      return InvalidInput(spec + ": " + file.status().message() + " (and no preset has that name" +
                          DidYouMean(spec, PresetNames()) + "; presets: " + names + ")");
    }
    text = std::move(*file);
  }
  return source;
}

}  // namespace

StatusOr<std::shared_ptr<const hw::Cluster>> LoadCluster(const std::string& spec) {
  DPLACE_ASSIGN_OR_RETURN(ClusterSource source, ReadClusterSource(spec));
  return ParseCluster(source.label, source.text, source.nodes);
}

StatusOr<job::Transformer> LoadModelConfig(const std::string& path) {
  auto parse = [&]() -> StatusOr<job::Transformer> {
    DPLACE_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
    if (!IsModelConfig(j)) {
      return InvalidInput(
          "not a model config: expected a Hugging Face config.json (an object "
          "with \"model_type\")");
    }
    return ReadModelConfig(JsonNode(j, kRoot));
  };
  auto model = Guarded(parse);
  if (!model.ok()) return model.status().WithContext(path);
  if (model->name.empty()) model->name = FileStem(path);
  return model;
}

bool IsModelConfigFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return false;
  // A config is small; graphs are read by their own loaders.
  if (text->size() > (1 << 20)) return false;
  auto j = ParseJson(*text);
  return j.ok() && IsModelConfig(*j);
}

bool IsGraphFile(const std::string& path) {
  if (path.ends_with(".onnx") || path.starts_with("gen:")) return true;
  auto text = ReadFile(path);
  if (!text.ok()) return false;
  if (IsPipeDreamProfile(*text)) return true;
  auto j = ParseJson(*text);
  return j.ok() && (FormatOf(*j) == "dplace-graph/1" || IsBaechiProfile(*j) || IsPaperInput(*j) ||
                    IsPiperInput(*j));
}

StatusOr<hw::Machine> LoadMachine(const std::string& spec) {
  DPLACE_ASSIGN_OR_RETURN(ClusterSource source, ReadClusterSource(spec));
  auto parse = [&]() -> StatusOr<hw::Machine> {
    DPLACE_ASSIGN_OR_RETURN(Json j, ParseClusterJson(source.text));
    return ReadMachine(JsonNode(j, kRoot), source.nodes);
  };
  auto machine = Guarded(parse);
  if (!machine.ok()) return machine.status().WithContext(source.label);
  return machine;
}

StatusOr<sim::Placement> LoadPlan(const std::string& path, const graph::Graph& g,
                                  const hw::Cluster& c) {
  auto parse = [&]() -> StatusOr<sim::Placement> {
    DPLACE_ASSIGN_OR_RETURN(Json j, ReadJsonFile(path));
    return ParsePlan(j, g, c);
  };
  auto placement = Guarded(parse);
  if (!placement.ok()) return placement.status().WithContext(path);
  return placement;
}

StatusOr<sim::Placement> LoadPlanText(const std::string& name, const std::string& text,
                                      const graph::Graph& g, const hw::Cluster& c) {
  auto parse = [&]() -> StatusOr<sim::Placement> {
    if (text.empty()) return InvalidInput("file is empty");
    DPLACE_ASSIGN_OR_RETURN(Json j, ParseJson(text));
    return ParsePlan(j, g, c);
  };
  auto placement = Guarded(parse);
  if (!placement.ok()) return placement.status().WithContext(name);
  return placement;
}

}  // namespace dplace::io
