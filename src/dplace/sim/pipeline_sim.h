// Pipeline-schedule simulation of a stage split: M micro-batches flow through the stages (the
// devices that hold ops, in the order forward tensors flow between them; ops that read nothing and
// hold no weights, such as exported constants, are made by each stage that uses them) under one
// of the schedules of schedules.h. Under an interleaved schedule a device runs several stages
// (chunks, found by depth: see SimulatePipeline) in sched::InterleavedOrder, one task at a time, and
// holds what each of its chunks holds.
//  - A stage's forward task F(m) runs its forward ops of micro-batch m; B(m) its backward and
//    update ops (absent for inference graphs). Under a schedule that splits backward (zb-h1,
//    zb-h2), B(m) runs as I(m), the input-gradient work (each backward op's time but its
//    weight_gradient_share), and W(m), the weight-gradient work and the update ops. Op times are
//    per micro-batch, as the graph gives them.
//  - Each stage runs its F and B (or I) tasks in the schedule's order: GPipe F(0..M-1) then
//    B(M-1..0); 1F1B and ZB-H1 min(S-1-s, M) warm-up forwards, ZB-H2 min(2(S-1-s), M), then one
//    forward / one backward, then the remaining backwards. A stage's W tasks run oldest first:
//    in any gap that one fits before the next F or I could start, and at once when more than the
//    schedule's allowance wait (ZB-H1: s, ZB-H2: 2s on stage s, as the schedules' memory
//    formulas hold), and after the last I.
//  - A task waits for every task whose tensors it consumes, plus their transfer time (the sum of
//    the crossing tensors' transfer costs between the two stages); transfers do not contend.
//  - Memory per stage: parameters + scratch (weights, gradients, optimiser state), plus, for every
//    micro-batch between the start of F(m) and the end of B(m) (or I(m)), what the stage holds for
//    it (HeldPerMicrobatch: what its backward keeps of its forward, the tensors it sends and
//    receives), and from the end of I(m) to the end of W(m) what its weight gradients still need
//    (HeldForWeightGradients), so 1F1B holds at most S - s micro-batches on stage s and GPipe M.
//    Inference graphs hold every forward output of F(m) until its end.
//  - Replicas (a device of hw::Cluster::Grouped: d devices, one stage): micro-batch m runs on
//    replica m mod d (PipeDream's and Piper's round robin; M must be a multiple of d), each
//    replica with its own order, warm-up and memory as if the stages' replicas before and after it
//    were stages (1F1B: ceil(replicas from it to the last stage / d) micro-batches in flight); a
//    training stage then all-reduces its weight gradients (the backward ops' param_bytes) over a
//    ring of its replicas, 2(d-1)/d of them over its slowest link plus 2(d-1) latencies, once its
//    last task ends, and the step ends with the last all-reduce. With one degree d for every
//    stage this is d pipelines of M/d micro-batches each, as frameworks run data parallelism.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/evaluation.h"
#include "dplace/sim/schedules.h"

namespace dplace::sim {

// What a task runs: a forward, a whole backward, or a split backward's input- or weight-gradient
// work (the letters of torch pipelining's schedule actions).
enum class TaskKind : char { kForward = 'F', kBackward = 'B', kInput = 'I', kWeight = 'W' };

struct PipelineTask {
  DeviceId device;
  int stage;  // in pipeline order: the device's under an interleaved schedule's chunks (c * S + s)
  int microbatch;
  TaskKind kind;
  double start_s, end_s;
  int replica = 0;  // of the device's replicas, the one that runs it
};

// A device of the pipeline: its stage, or under an interleaved schedule its chunks together.
struct PipelineStage {
  DeviceId device;
  double forward_s = 0, backward_s = 0;  // per micro-batch; backward_s with the updates
  double weight_s = 0;  // of backward_s, what runs as W under a schedule that splits backward
  double busy_s = 0;  // over its replicas
  int peak_in_flight = 0;  // micro-batches (of a chunk, interleaved) whose activations were held
  double held_per_microbatch_bytes = 0;  // HeldPerMicrobatch (every forward output: inference)
  double held_for_weight_bytes = 0;      // HeldForWeightGradients, from I(m) to W(m)
  bool recomputes = false;               // recompute != kNone
  // kFull: keeps only its inputs and outputs, runs its forward again; kSelective: keeps all but
  // what attention's core makes (graph::AttentionCoreOps), runs the core again.
  Recompute recompute = Recompute::kNone;
  // What it would keep of a micro-batch recomputing fully (HeldWhenRecomputing; 0 unless the
  // run may recompute fully: full or auto) and selectively (HeldPerMicrobatch less attention's
  // core outputs; held_per_microbatch_bytes unless the run may: selective or auto).
  double held_when_recomputing_bytes = 0;
  double held_selective_bytes = 0;
  double peak_memory_bytes = 0;  // of its busiest replica
  double memory_capacity_bytes = 0;
  // Its device's replicas (hw::Device::replicas): each runs every replicas-th micro-batch, and
  // after its last task the stage all-reduces its weight gradients over them (allreduce_s).
  int replicas = 1;
  double allreduce_s = 0;
};

struct PipelineResult {
  PipelineSchedule schedule = PipelineSchedule::k1F1B;
  int microbatches = 0;
  int virtual_stages = 1;  // chunks a device (interleaved), stages = devices x virtual_stages
  double makespan_s = 0;
  double time_per_microbatch_s = 0;  // makespan / micro-batches
  double bubble_fraction = 0;        // 1 - Σ busy / (stages × makespan)
  bool feasible = true;
  std::string reason;  // memory overflow, when infeasible
  std::vector<PipelineStage> stages;
  std::vector<PipelineTask> tasks;  // in start order
};

// The stages of `placement` in pipeline order: the devices that hold ops, in the order forward
// tensors flow between them (ties: the topological position of their first forward op; ops that
// read nothing, hold no weights and compute nothing are made by every stage and order none).
// InvalidInput when two stages feed each other.
StatusOr<std::vector<DeviceId>> PipelineStageOrder(const graph::Graph& g,
                                                   const Placement& placement, int num_devices);

// Where each op runs in a pipeline: its stage, in pipeline order, and each stage's device; one
// stage a device that holds ops, or under an interleaved schedule one a chunk of a device.
struct PipelineStages {
  IdVector<OpId, int> stage;
  std::vector<DeviceId> device;
  int chunks = 1;  // stages a device
};

// The stages of `placement`: one a device (PipelineStageOrder) where they make a pipeline, or
// else, `interleaved`, its chunks (SimulatePipeline says how they are found). The errors of
// PipelineStageOrder, or with `interleaved` of the chunks.
StatusOr<PipelineStages> StagesOf(const Problem& p, const Placement& placement, bool interleaved);

// Bytes device d holds for one micro-batch in flight of a training graph (forward, backward and
// update ops) under `placement`: the storages (a view counts as its base, a view of a parameter
// or a model input as nothing) of the forward tensors that a backward op on d keeps or that d
// sends to another device's forward ops, and the copies d receives from other devices' forward
// ops; each storage once, at the size its holder's kind keeps (a copy: its sender's; Tensor::
// BytesOn). The same rule as the step's memory: not every forward output.
IdVector<DeviceId, double> HeldPerMicrobatch(const Problem& p, const Placement& placement);

// Bytes device d still holds for one micro-batch once its input gradients are computed, until its
// weight gradients are: the storages of the forward tensors kept by its backward ops that compute
// weight gradients (weight_gradient_share > 0) and the gradients those ops read. Each once.
IdVector<DeviceId, double> HeldForWeightGradients(const Problem& p, const Placement& placement);

// HeldPerMicrobatch less what device d's backward keeps of attention's core outputs
// (graph::AttentionCoreOps): what it keeps of one micro-batch recomputing the core.
IdVector<DeviceId, double> HeldSelectivePerMicrobatch(const Problem& p, const Placement& placement);

// Bytes device d keeps of one micro-batch in flight when it recomputes: the forward tensors it
// receives from other devices' forward ops (its stage's inputs) and the storages of those it sends
// them (its outputs, kept until its backward as HeldPerMicrobatch keeps them), each once, at its
// sender's size.
IdVector<DeviceId, double> HeldWhenRecomputing(const Problem& p, const Placement& placement);

// InvalidInput when microbatches < 1. Under an interleaved schedule a plan whose devices make a
// pipeline runs 1F1B; otherwise a forward op's depth is the most device changes on a path to it
// from the graph's inputs, a device's forward ops of one depth are a chunk, and the chunks by
// depth the stages, which must go round the devices (chunk k on the device of chunk k mod S;
// InvalidInput otherwise, and when the micro-batches are not a multiple of the devices); backward
// and update ops go with the chunk whose forward ops they read. The placement must pass
// CheckShape.
StatusOr<PipelineResult> SimulatePipeline(const Problem& problem, const Placement& placement,
                                          PipelineSchedule schedule, int microbatches,
                                          Recompute recompute = Recompute::kNone);

// The schedules `--schedule auto` chooses from: 1F1B, interleaved (which runs a plan of chunks,
// and a plan of one stage a device as 1F1B), ZB-H1 and ZB-H2 (GPipe has 1F1B's bubble and holds
// more). The fastest of them over `microbatches` whose stages fit their memory, or the fastest
// when none fits; ties to the one listed first. A plan whose devices are no pipeline of one stage
// each runs interleaved only; PipelineStageOrder's error when it does not. The errors of
// SimulatePipeline.
StatusOr<PipelineResult> SimulateFastestSchedule(const Problem& problem, const Placement& placement,
                                                 int microbatches, Recompute recompute);

// SimulatePipeline (recomputing as the problem says) of the schedule named `name`, or
// SimulateFastestSchedule for "auto". InvalidInput "schedule: 'x' is not ..." for another name.
StatusOr<PipelineResult> SimulateNamedSchedule(const Problem& problem, const Placement& placement,
                                               std::string_view name, int microbatches);

// The problem's pipeline: its schedule over its micro-batches, or with schedule_auto the fastest
// (SimulateFastestSchedule), recomputing as the problem says.
StatusOr<PipelineResult> SimulateProblemPipeline(const Problem& problem,
                                                 const Placement& placement);

// The pipeline objective (Objective::kPipeline): SimulateProblemPipeline,
// value = time per micro-batch, per device its stage's work (busy_s = load) and peak memory. A
// placement whose stages are no pipeline (two stages feed each other, the schedule deadlocks) is
// infeasible with that reason and valued at its max-load, which also grows with the work of the
// busiest device, so a search still has a gradient towards pipelines; constraint and memory
// violations make it infeasible as under the other objectives. The placement must pass CheckShape.
Evaluation EvaluatePipeline(const Problem& problem, const Placement& placement);

}  // namespace dplace::sim
