// Loading a problem as a user names it: a graph file (any format dplace reads) with its
// transformations (module units, training expansion, precision, fixed input shapes), and a
// cluster (preset or file) unless the graph's file defines its machine. The CLI's flags, the
// benches and the Python module fill a ProblemSpec.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/io/load.h"
#include "dplace/sim/problem.h"

namespace dplace::run {

struct GraphSpec {
  std::string path;
  std::string text;       // when not empty: the graph's document itself, and `path` only names it
  bool training = false;  // expand into a training step (graph/training.h)
  // With `training`: a graph that is a training step already (a profile with backward ops) is
  // taken as it is instead of refused.
  bool training_as_given = false;
  bool free_gradients = false;      // ... without co-locating backward and update ops
  std::string dtype;                // fp32 | fp16 | bf16 | amp; empty: the graph's own precision
  std::vector<std::string> shapes;  // "name=8x512": an ONNX input's fixed size
  // "op", "blocks" (io::GroupByBlocks) or "module[:DEPTH]" (io::GroupByModule); empty: op, or
  // with `pipeline` blocks where the graph names modules (a pipeline's units).
  std::string unit;
  bool pipeline = false;  // the graph is split into stages (--stages, --export stages)
};

// Loads the graph, prints the importer's warnings on stderr ("warning: <file>: ..."), expands
// it for training when asked, and rescales it to `dtype` (LoadedGraph::precision then says which).
StatusOr<io::LoadedGraph> LoadGraphFile(const GraphSpec& spec);

// The seconds dp may take to choose replicas (--replicas auto) when no time limit says.
inline constexpr double kReplicasSeconds = 10;

struct ProblemSpec {
  GraphSpec graph;
  std::string cluster;  // preset or file; optional when the graph file defines the machine
  std::vector<std::string> devices;  // when not empty: only these devices of the cluster, in order
  int stages = 0;  // when > 0: only the first `stages` accelerators (of `devices` when given)
  std::string objective;  // step | throughput | latency; empty: throughput for the paper's files,
                          // else step
  std::string runtime;    // objective step: executor | eager (sim::Issue); empty: executor
  // The pipeline schedule a stage's memory is counted by (training steps dplace expands) and the
  // stages file runs: a schedule (sim/schedules.h), optionally :MICROBATCHES (1 to 4096, default
  // 8); empty: 1f1b:8.
  std::string schedule;
  // Which stages recompute their forward in backward (the pipeline objective): none | full |
  // auto (sim::Recompute); empty: none.
  std::string recompute;
  // A stage's data-parallel replicas (hw::Cluster::Grouped, ReplicaGroups): "N" (each N devices
  // in order one stage's, --stages then counting stages of N), "N1,N2,..." (one stage's each, in
  // order), or "auto" (dp chooses a degree per stage as the problem loads, Piper's DP,
  // PlanReplicas); empty: one.
  std::string replicas;
  double replicas_seconds = kReplicasSeconds;  // what "auto" may take (place: its --time-limit)
};

struct LoadedProblem {
  io::LoadedGraph loaded;
  std::shared_ptr<const sim::Problem> problem;
  std::string replicas_note;  // under --replicas auto, what dp chose (WithReplicas)
};

StatusOr<LoadedProblem> LoadProblem(const ProblemSpec& spec);

// The objective named: `objective` as given, or where replicas are asked for and no objective
// is, pipeline (only a pipeline's stages have replicas).
std::string ObjectiveWithReplicas(const std::string& objective, const std::string& replicas);

// The devices `stages` stages take under ProblemSpec's `replicas`: stages x N, or the sum of a
// degree list (which must name `stages` degrees); `stages` itself without fixed replicas.
// InvalidInput "replicas: ..." for a malformed list.
StatusOr<int> DevicesForStages(int stages, const std::string& replicas);

// `problem` with ProblemSpec's `replicas`: grouped (sim::GroupedProblem) as the list says, or as
// dp chooses (auto: replicas.h PlanReplicas in `seconds`, what it chose in `note`), or itself
// (empty).
// InvalidInput "replicas: ..." under an objective other than pipeline; the errors of
// ReplicaGroups.
StatusOr<std::shared_ptr<const sim::Problem>> WithReplicas(
    std::shared_ptr<const sim::Problem> problem, const std::string& replicas,
    double seconds = kReplicasSeconds, std::string* note = nullptr);

// `cluster` restricted as ProblemSpec's devices and stages say: the named devices, in the order
// given (names must exist and be distinct), then, with stages > 0, the first `stages` of them
// that are no CPU (a pipeline of that many stages, as DeepSpeed's num_stages). The cluster itself
// when neither is given. InvalidInput, naming the flag, for an unknown name, a repeated one, or
// more stages than accelerators.
StatusOr<std::shared_ptr<const hw::Cluster>> RestrictCluster(
    std::shared_ptr<const hw::Cluster> cluster, const std::vector<std::string>& devices,
    int stages);

// The problem of a loaded graph on `cluster` (null: the machine the graph's file defines) by
// `objective`, `runtime`, `schedule` and `recompute` (empty: as ProblemSpec says); `name` names
// the graph in messages.
StatusOr<std::shared_ptr<const sim::Problem>> MakeLoadedProblem(
    const io::LoadedGraph& loaded, std::shared_ptr<const hw::Cluster> cluster,
    const std::string& objective, const std::string& name, const std::string& runtime = "",
    const std::string& schedule = "", const std::string& recompute = "");

}  // namespace dplace::run
