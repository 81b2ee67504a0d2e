#include "dplace/run/load.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>

#include "dplace/base/spelling.h"
#include "dplace/graph/precision.h"
#include "dplace/graph/training.h"
#include "dplace/io/plan_export.h"
#include "dplace/run/chunks.h"
#include "dplace/run/replicas.h"
#include "dplace/sim/objectives.h"

namespace dplace::run {
namespace {

StatusOr<io::InputShapes> ParseShapes(const std::vector<std::string>& specs) {
  io::InputShapes shapes;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidInput("shapes: '" + spec + "' is not NAME=DIMS (e.g. tokens=8x512)");
    }
    std::vector<int64_t>& dims = shapes[spec.substr(0, eq)];
    const std::string text = spec.substr(eq + 1);
    for (size_t at = 0; at <= text.size();) {
      const size_t x = std::min(text.find('x', at), text.size());
      const std::string d = text.substr(at, x - at);
      char* end = nullptr;
      const long long v = d.empty() ? 0 : std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end != '\0' || v < 1 || v > (1LL << 40)) {
        return InvalidInput("shapes: '" + spec +
                            "': each dimension must be an integer from 1 "
                            "to 2^40, dimensions joined by 'x'");
      }
      dims.push_back(v);
      at = x + 1;
    }
  }
  return shapes;
}

}  // namespace

StatusOr<io::LoadedGraph> LoadGraphFile(const GraphSpec& flags) {
  DPLACE_ASSIGN_OR_RETURN(io::InputShapes shapes, ParseShapes(flags.shapes));
  if (!shapes.empty() && !flags.path.ends_with(".onnx")) {
    return InvalidInput(flags.path + ": shapes: apply to ONNX models only");
  }
  DPLACE_ASSIGN_OR_RETURN(io::LoadedGraph loaded, flags.text.empty()
                                                      ? io::LoadGraph(flags.path, shapes)
                                                      : io::LoadGraphText(flags.path, flags.text));
  for (const std::string& w : loaded.warnings) {
    std::cerr << "warning: " << flags.path << ": " << w << "\n";
  }
  if (flags.unit == "blocks" || (flags.unit.empty() && flags.pipeline)) {
    // A pipeline's default: blocks, where the graph names modules (else its ops).
    auto grouped = io::GroupByBlocks(*loaded.graph);
    if (grouped.ok()) {
      loaded.graph = std::make_shared<const graph::Graph>(std::move(grouped).value());
    } else if (!flags.unit.empty()) {
      return grouped.status().WithContext("unit").WithContext(flags.path);
    }
  } else if (!flags.unit.empty() && flags.unit != "op") {
    int depth = 1;
    if (flags.unit != "module") {
      const std::string prefix = "module:";
      char* end = nullptr;
      const long v = flags.unit.starts_with(prefix)
                         ? std::strtol(flags.unit.c_str() + prefix.size(), &end, 10)
                         : 0;
      if (end == nullptr || *end != '\0' || v < 1 || v > 64) {
        return InvalidInput("unit: '" + flags.unit +
                            "' is not op, blocks, module or module:DEPTH "
                            "(DEPTH from 1 to 64)");
      }
      depth = static_cast<int>(v);
    }
    auto grouped = io::GroupByModule(*loaded.graph, depth);
    if (!grouped.ok()) return grouped.status().WithContext("unit").WithContext(flags.path);
    loaded.graph = std::make_shared<const graph::Graph>(std::move(grouped).value());
  }
  const auto is_step = [](const graph::Graph& g) {
    return std::any_of(g.ops().begin(), g.ops().end(),
                       [](const graph::Op& op) { return op.kind != graph::OpKind::kForward; });
  };
  if (flags.training && !(flags.training_as_given && is_step(*loaded.graph))) {
    auto expanded = graph::ExpandTraining(*loaded.graph, {.colocate = !flags.free_gradients});
    if (!expanded.ok()) return expanded.status().WithContext("training").WithContext(flags.path);
    loaded.graph = std::make_shared<const graph::Graph>(std::move(expanded).value());
  }
  if (!flags.dtype.empty()) {
    const auto precision = graph::ParsePrecision(flags.dtype);
    if (!precision) {
      return InvalidInput("dtype: '" + flags.dtype + "' is not fp32, fp16, bf16 or amp");
    }
    if (*precision != loaded.precision) {
      loaded.graph = std::make_shared<const graph::Graph>(
          graph::ApplyPrecision(*loaded.graph, loaded.precision, *precision));
      loaded.precision = *precision;
    }
  }
  return loaded;
}

StatusOr<std::shared_ptr<const sim::Problem>> MakeLoadedProblem(
    const io::LoadedGraph& loaded, std::shared_ptr<const hw::Cluster> cluster,
    const std::string& objective_name, const std::string& name, const std::string& runtime,
    const std::string& schedule, const std::string& recompute) {
  if (!runtime.empty() && runtime != "executor" && runtime != "eager") {
    return InvalidInput("runtime: '" + runtime + "' is not executor or eager");
  }
  // A file that defines its own machine is an instance: an op that machine cannot run makes it
  // infeasible (a result). A graph paired with a cluster that cannot run it is a usage error.
  const sim::MissingDevice missing =
      cluster == nullptr ? sim::MissingDevice::kInfeasible : sim::MissingDevice::kBadInput;
  if (cluster == nullptr) cluster = loaded.cluster;
  if (cluster == nullptr) {
    return InvalidInput(name +
                        ": cluster: none given, and this graph format does not describe a machine "
                        "(give a preset such as k80x4, or a dplace-cluster/1 file)");
  }
  if (graph::UsesHalfPeak(loaded.precision)) {
    cluster = std::make_shared<const hw::Cluster>(cluster->AtHalfPrecision());
  }
  sim::Objective objective = sim::DefaultObjective(loaded.format == io::GraphFormat::kPaper);
  if (!objective_name.empty()) {
    DPLACE_ASSIGN_OR_RETURN(objective, sim::ObjectiveNamed(objective_name));
  }
  auto problem =
      sim::MakeProblem(loaded.graph, cluster, objective, cost::RooflineCostModel(), missing);
  if (!problem.ok()) return problem.status().WithContext(name);
  // A training step split into stages holds what 1F1B holds; the paper's files keep their op
  // sizes (their optima are the paper's).
  const bool training =
      std::any_of(loaded.graph->ops().begin(), loaded.graph->ops().end(),
                  [](const graph::Op& op) { return op.kind == graph::OpKind::kBackward; });
  if (!schedule.empty()) {
    // NAME[:MICROBATCHES], interleaved[:CHUNKS[:MICROBATCHES]].
    std::vector<std::string> parts;
    for (size_t at = 0;;) {
      const size_t colon = schedule.find(':', at);
      parts.push_back(schedule.substr(at, colon == std::string::npos ? colon : colon - at));
      if (colon == std::string::npos) break;
      at = colon + 1;
    }
    const bool choose = parts[0] == "auto";
    const auto parsed = choose ? sim::PipelineSchedule::k1F1B : sched::ScheduleNamed(parts[0]);
    const bool interleaved = parsed && sim::RowOf(*parsed).interleaves;
    auto number = [&](size_t i, long fallback) {
      if (i >= parts.size()) return fallback;
      char* end = nullptr;
      const long v = std::strtol(parts[i].c_str(), &end, 10);
      return parts[i].empty() || *end != '\0' ? -1 : v;
    };
    const long chunks = interleaved ? number(1, 2) : 1;
    const long m = number(interleaved ? 2 : 1, 8);
    if (!parsed || parts.size() > (interleaved ? 3U : 2U) || m < 1 || m > 4096 || chunks < 1 ||
        chunks > 64) {
      return InvalidInput("schedule: '" + schedule + "' is not auto or a schedule (" +
                          sched::ScheduleNames() +
                          "), optionally :MICROBATCHES (1 to 4096); interleaved[:CHUNKS (1 to "
                          "64, default 2)[:MICROBATCHES]]");
    }
    problem->schedule = *parsed;
    problem->schedule_auto = choose;
    problem->microbatches = static_cast<int>(m);
    if (interleaved) problem->virtual_stages = static_cast<int>(chunks);
  }
  if (training && loaded.format != io::GraphFormat::kPaper) {
    problem->stage_memory = sim::Problem::StageMemory::kSchedule;
  }
  if (!recompute.empty()) {
    const auto parsed = sim::ParseRecompute(recompute);
    if (!parsed)
      return InvalidInput("recompute: '" + recompute + "' is not none, selective, full or auto");
    problem->recompute = *parsed;
  }
  problem->times_in_seconds = loaded.format != io::GraphFormat::kPaper;
  if (runtime == "eager") {
    if (!sim::RowOf(objective).takes_runtime) {
      return InvalidInput("runtime: eager judges a step (objective step), not " +
                          std::string(sim::ObjectiveName(objective)));
    }
    sim::UseEagerRuntime(*problem);
  }
  return std::make_shared<const sim::Problem>(std::move(problem).value());
}

StatusOr<std::shared_ptr<const hw::Cluster>> RestrictCluster(
    std::shared_ptr<const hw::Cluster> cluster, const std::vector<std::string>& devices,
    int stages) {
  if (stages < 0 || stages > 4096) {
    return InvalidInput("stages: must be between 1 and 4096, not " + std::to_string(stages));
  }
  if (devices.empty() && stages == 0) return cluster;
  std::vector<hw::DeviceId> keep;
  if (devices.empty()) {
    for (hw::DeviceId d : cluster->device_ids()) keep.push_back(d);
  }
  std::vector<std::string> names;
  for (const hw::Device& d : cluster->devices()) names.push_back(d.name);
  for (const std::string& name : devices) {
    auto d = cluster->FindDevice(name);
    if (!d) {
      return InvalidInput("devices: cluster " + cluster->name() + " has no device '" + name + "'" +
                          DidYouMean(name, names));
    }
    if (std::find(keep.begin(), keep.end(), *d) != keep.end()) {
      return InvalidInput("devices: '" + name + "' is named twice");
    }
    keep.push_back(*d);
  }
  if (stages > 0) {
    std::vector<hw::DeviceId> accelerators;
    for (hw::DeviceId d : keep) {
      if (cluster->device(d).kind != "cpu" && static_cast<int>(accelerators.size()) < stages) {
        accelerators.push_back(d);
      }
    }
    if (static_cast<int>(accelerators.size()) < stages) {
      return InvalidInput("stages: " + std::to_string(stages) + " stages need " +
                          std::to_string(stages) + " accelerators; " +
                          (devices.empty() ? "cluster " + cluster->name() : "the devices given") +
                          " has " + std::to_string(accelerators.size()));
    }
    keep = accelerators;
  }
  return std::make_shared<const hw::Cluster>(cluster->Subset(keep));
}

std::string ObjectiveWithReplicas(const std::string& objective, const std::string& replicas) {
  return objective.empty() && !replicas.empty() ? "pipeline" : objective;
}

StatusOr<int> DevicesForStages(int stages, const std::string& replicas) {
  if (replicas.empty() || replicas == "auto" || stages <= 0) return stages;
  DPLACE_ASSIGN_OR_RETURN(const std::vector<int> degrees, ParseReplicaDegrees(replicas));
  if (degrees.size() == 1) return stages * degrees[0];
  if (degrees.size() != static_cast<size_t>(stages)) {
    return InvalidInput("replicas: '" + replicas + "' names " + std::to_string(degrees.size()) +
                        " stages, and stages asks for " + std::to_string(stages));
  }
  int devices = 0;
  for (int d : degrees) devices += d;
  return devices;
}

StatusOr<std::shared_ptr<const sim::Problem>> WithReplicas(
    std::shared_ptr<const sim::Problem> problem, const std::string& replicas, double seconds,
    std::string* note) {
  if (replicas.empty()) return problem;
  if (problem->objective != sim::Objective::kPipeline) {
    return InvalidInput("replicas: stages have replicas under the pipeline objective only, not " +
                        std::string(sim::ObjectiveName(problem->objective)));
  }
  if (replicas == "auto") {
    std::string chosen;
    DPLACE_ASSIGN_OR_RETURN(
        auto planned,
        PlanReplicas(sim::Changed(*problem, [](sim::Problem& p) { p.replicas_auto = true; }),
                     {.seconds = seconds}, &chosen));
    if (note != nullptr) *note = std::move(chosen);
    return planned;
  }
  DPLACE_ASSIGN_OR_RETURN(auto groups, ReplicaGroups(problem->c(), replicas));
  return sim::GroupedProblem(*problem, groups);
}

StatusOr<LoadedProblem> LoadProblem(const ProblemSpec& flags) {
  LoadedProblem out;
  GraphSpec graph = flags.graph;
  graph.pipeline = graph.pipeline || flags.stages > 0;
  DPLACE_ASSIGN_OR_RETURN(out.loaded, LoadGraphFile(graph));
  std::shared_ptr<const hw::Cluster> cluster;
  if (!flags.cluster.empty()) {
    DPLACE_ASSIGN_OR_RETURN(cluster, io::LoadCluster(flags.cluster));
  }
  DPLACE_ASSIGN_OR_RETURN(const int devices_for_stages,
                          DevicesForStages(flags.stages, flags.replicas));
  if (!flags.devices.empty() || devices_for_stages != 0) {
    if (cluster == nullptr) cluster = out.loaded.cluster;
    if (cluster != nullptr) {
      DPLACE_ASSIGN_OR_RETURN(cluster, RestrictCluster(cluster, flags.devices, devices_for_stages));
    }
  }
  DPLACE_ASSIGN_OR_RETURN(
      out.problem,
      MakeLoadedProblem(out.loaded, cluster, ObjectiveWithReplicas(flags.objective, flags.replicas),
                        flags.graph.path, flags.runtime, flags.schedule, flags.recompute));
  DPLACE_ASSIGN_OR_RETURN(out.problem, WithReplicas(out.problem, flags.replicas,
                                                    flags.replicas_seconds, &out.replicas_note));
  return out;
}

}  // namespace dplace::run
