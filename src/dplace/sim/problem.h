// A placement problem: graph + cluster + cost table + objective, and a Placement (one device per
// op).
//
// MakeProblem checks that every op has at least one device it may run on and precomputes what every
// evaluation needs (op times per device class, which device kinds each op allows, lower bounds).
// A Problem is immutable; placers and evaluators only read it.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph.h"
#include "dplace/hw/cluster.h"
#include "dplace/sim/schedules.h"
#include "dplace/sim/step_model.h"

namespace dplace::sim {

using graph::OpId;
using hw::DeviceId;

enum class Objective {
  kStep,        // time of one step, by discrete-event simulation (DESIGN.md §3)
  kThroughput,  // pipelined max-load of Tarnawski et al. 2020 (time per sample)
  kLatency,     // single-sample latency of a split, Tarnawski et al. 2020 (latency.h)
  kPipeline,    // time per micro-batch of the problem's pipeline schedule, simulated
                // (pipeline_sim.h): how a pipeline framework runs the stages
};
// Every objective has its row in sim/objectives.h (ObjectiveTable).
std::string_view ObjectiveName(Objective objective);
std::optional<Objective> ParseObjective(std::string_view name);
// What the objective's value is called: "step time", "max-load", "latency", "time per
// micro-batch".
std::string_view ValueName(Objective objective);

// One DeviceId per op, indexed by OpId.
using Placement = IdVector<OpId, DeviceId>;
// A value per op, per tensor, per device, indexed by the id.
template <typename T>
using PerOp = IdVector<OpId, T>;
template <typename T>
using PerTensor = IdVector<graph::TensorId, T>;
template <typename T>
using PerDevice = IdVector<DeviceId, T>;

// The placement that puts op i on device devices[i] (tests and examples: OnDevices({0, 1, 0})).
inline Placement OnDevices(std::initializer_list<int32_t> devices) {
  Placement p;
  p.reserve(devices.size());
  for (int32_t d : devices) p.push_back(DeviceId(d));
  return p;
}

// The modules of a graph as a device map runs them (accelerate, eager PyTorch): a module mapped
// whole runs on one device, its inputs moved there at its entry; a module with no module inside it
// (a leaf) is never split; the own ops of a module split over devices (a parent's residual add,
// the root's ops) run where their inputs are. Only the modules with forward ops are listed.
struct MappedModules {
  struct Module {
    std::string path;       // "" for the root
    std::vector<OpId> ops;  // the forward ops of the leaves in it (of itself, for a leaf)
    std::vector<OpId> own;  // a module that is no leaf: its own forward ops
    bool leaf = false;      // no module inside it has ops (the root never counts as a leaf)
  };
  std::vector<Module> modules;
};
// The modules of `g` by graph::OpModules.
MappedModules MapModules(const graph::Graph& g);

struct Problem {
  std::shared_ptr<const graph::Graph> graph;
  std::shared_ptr<const hw::Cluster> cluster;
  Objective objective = Objective::kStep;
  cost::CostTable costs;
  // Bit k set when the op may run on devices of cluster kind k (cluster->kinds()[k]).
  PerOp<uint64_t> allowed_kinds;
  // A lower bound on `objective` over all feasible placements (lower_bound.h).
  double lower_bound = 0;
  // Why no placement can be feasible, when the problem's own machine lacks every device an op may
  // run on (see MakeProblem); empty otherwise. Every evaluation then reports this reason.
  std::string infeasible_reason;
  // How the step simulator models transfers (objective step only; step_model.h). MakeProblem
  // gives the default; variants.h makes problems with others.
  StepModel step_model;
  // How the throughput objective and the exact placers count a device's memory (objectives
  // throughput and latency). The paper's rule, every op's parameters and outputs (op sizes), or a
  // pipeline schedule's: what is resident for the step plus, per micro-batch in flight on the
  // stage (InFlight), what it keeps of one (constraints.h). MakeProblem gives op sizes; the run
  // service gives the schedule's rule (1F1B unless asked) to the training graphs it expands.
  enum class StageMemory { kOpSizes, kSchedule } stage_memory = StageMemory::kOpSizes;
  // The pipeline's schedule and micro-batches per step (the pipeline objective, the stages file's
  // run, and with StageMemory::kSchedule the memory rule).
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  // `--schedule auto`: the pipeline objective judges each split by the fastest schedule that
  // fits (SimulateProblemPipeline), so a search chooses the schedule with the split; `schedule`
  // (1F1B) then gives only the memory rule, the least any schedule that splits nothing holds.
  bool schedule_auto = false;
  // Which stages recompute their forward in backward (the pipeline objective; schedules.h).
  Recompute recompute = Recompute::kNone;
  int microbatches = 8;
  // Chunks a device runs under the interleaved schedule (virtual stages a device, V).
  int virtual_stages = 2;
  // `--replicas auto`: the exact placers may run a stage on several devices (Piper's DP over
  // stage, degree and recomputation); their result then names the groups (place::PlaceResult).
  bool replicas_auto = false;
  // Whether op times (and so every objective's value) are seconds: all but the paper's files,
  // whose times are in the paper's own unit (the run service says so; tables print bare numbers).
  bool times_in_seconds = true;
  // Under the eager runtime (step_model.issue kProgramOrder, a device map): the modules, whose
  // rule every evaluation checks (constraints.h); null otherwise. UseEagerRuntime sets both.
  std::shared_ptr<const MappedModules> mapped_modules;

  const graph::Graph& g() const { return *graph; }
  const hw::Cluster& c() const { return *cluster; }
  int num_ops() const { return graph->num_ops(); }
  int num_devices() const { return cluster->num_devices(); }
  bool Allowed(OpId op, DeviceId d) const {
    return (allowed_kinds[op] >> cluster->KindIndex(d)) & 1u;
  }
  double LowerBound() const { return lower_bound; }
};

// Micro-batches in flight on device stage `stage` (from 0) of `stages` under the problem's
// schedule (schedules.h); interleaved: its chunks' counts summed, as whole micro-batches of the
// device (each chunk holding about a V-th), rounded up.
inline int InFlight(const Problem& problem, int stage, int stages) {
  if (problem.schedule != PipelineSchedule::kInterleaved) {
    return InFlight(problem.schedule, stage, stages, problem.microbatches);
  }
  const int v = problem.virtual_stages;
  int sum = 0;
  for (int c = 0; c < v; ++c) {
    sum += InFlight(problem.schedule, c * stages + stage, stages * v, problem.microbatches, v);
  }
  return (sum + v - 1) / v;
}

// Makes `problem` judge placements as a device map runs under accelerate: ops issued in program
// order (step_model.h) and the module rule (MappedModules).
void UseEagerRuntime(Problem& problem);

// Where the ops of `placement` run when it is dispatched as a device map (problem.mapped_modules;
// `placement` itself when null): a module that is no leaf and whose leaves' ops are on one device
// is mapped whole, and its own ops run there; the own ops of a module that is not, in program
// order, where their first input is (ops reading none of the graph's tensors where the model's
// inputs are fed: the device of the first op mapped with a module); each such op's co-location
// group (its backward and update ops) goes with it. Placers choose the leaves' devices; the
// evaluation of an eager problem judges this placement, and the run service returns it.
Placement Dispatched(const Problem& problem, const Placement& placement);

// What to do when an op may run on no device of the cluster.
enum class MissingDevice {
  kBadInput,    // the user paired a graph with a cluster that cannot run it: InvalidInput
  kInfeasible,  // the graph's file defines its own machine (the paper's k accelerators + l CPUs):
                // the instance is infeasible; the op may go anywhere and every evaluation says why
};

// Builds a problem. InvalidInput when an op may run on no device of the cluster ("op 'x' may only
// run on [tpu], which the cluster 'c' does not have") unless `missing` says the instance is then
// infeasible, or when the cluster has more than 64 device kinds.
StatusOr<Problem> MakeProblem(std::shared_ptr<const graph::Graph> graph,
                              std::shared_ptr<const hw::Cluster> cluster, Objective objective,
                              const cost::CostModel& model,
                              MissingDevice missing = MissingDevice::kBadInput);
// The same with the op times given (e.g. summed over the ops a coarse op stands for).
StatusOr<Problem> MakeProblem(std::shared_ptr<const graph::Graph> graph,
                              std::shared_ptr<const hw::Cluster> cluster, Objective objective,
                              cost::CostTable costs, MissingDevice missing);

// A copy of `problem` with `change` applied to it, shared: the one way to vary a setting of a
// problem others hold (its bound, its schedule, replicas_auto).
template <typename Change>
std::shared_ptr<const Problem> Changed(const Problem& problem, Change&& change) {
  auto copy = std::make_shared<Problem>(problem);
  std::forward<Change>(change)(*copy);
  return copy;
}

// `problem` on another machine (`cluster`, with `costs` for it): its graph, objective and every
// setting of its run, its lower bound and reason.
StatusOr<std::shared_ptr<const Problem>> ProblemOn(const Problem& problem,
                                                   std::shared_ptr<const hw::Cluster> cluster,
                                                   cost::CostTable costs);

// `problem` with each group of its devices run as one device of that many replicas
// (hw::Cluster::Grouped): a stage on a group runs whole micro-batches on each replica in turn and
// all-reduces its weight gradients over them (pipeline_sim.h). Its devices' replicas are fixed:
// replicas_auto is off. The errors of Grouped.
StatusOr<std::shared_ptr<const Problem>> GroupedProblem(
    const Problem& problem, const std::vector<std::vector<DeviceId>>& groups);

// A placement of `problem` whose devices each lead a group (the group's first device) as a
// placement of GroupedProblem(problem, groups): device d as the index of the group d leads.
Placement GroupedPlacement(const Placement& placement,
                           const std::vector<std::vector<DeviceId>>& groups);

}  // namespace dplace::sim
