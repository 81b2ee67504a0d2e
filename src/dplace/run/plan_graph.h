// Planning the training job of a graph (`dplace plan --model GRAPH`): any graph dplace reads (ONNX,
// dplace-graph/1, a PipeDream profile), whose ops are not a config's transformer layers.
// Its strategy families, each at its best on the machine's GPUs for the global batch:
//   data-parallel  the step whole on each of d GPUs, ZeRO 0, 1 or 2, gradients accumulated
//   fsdp           the same with ZeRO-3 (FSDP full shard)
//   tensor         Megatron's tensor parallelism of degree t inside a node over the graph's
//                  column -> row blocks (graph/tensor_parallel.h), times data parallelism
//   pipeline       dp's pipeline split with replicas per stage (Piper's DP, run/replicas.h) under
//                  1F1B
//   op-level       the op-level placers' plan of one step over every GPU
// The data-parallel families are the one-GPU step (the step simulator) with the machine's
// collectives (cost/collectives.h), costed as the job planner costs them (job/costs.h); the others
// are the placers' plans judged by their simulations.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/fit.h"

namespace dplace::run {

struct GraphPlanRequest {
  std::string model;         // a graph file
  std::string cluster;       // a preset, NAME:N, or a cluster file
  int64_t global_batch = 0;  // samples a step: a multiple of the graph's batch
  double time_limit_s = 10;  // for the pipeline's and the op-level searches together
  uint64_t seed = 1;
  std::vector<std::string> shapes;  // an ONNX model's input sizes, "name=8x512" (GraphSpec)
};

struct GraphPlanRow {
  std::string family;  // data-parallel, fsdp, tensor, pipeline, op-level
  std::string what;    // the plan in words ("ZeRO-1 over 16 GPUs, 4 micro-batches a GPU")
  int gpus = 0;        // GPUs the plan uses
  double iteration_s = 0;
  double samples_per_s = 0;
  double mfu = 0;  // the graph's FLOPs a step (forward, backward, update) over the GPUs' peak
  // The busiest GPU's memory. Split only for the data-parallel families (the placers' plans give
  // the simulated peak, in `memory.activations_bytes` with the rest zero, and split_memory false).
  sim::MemoryNeed memory;
  bool split_memory = true;
  bool fits = false;
  std::string note;  // what the plan's search said, or why it does not fit
};

// A block tensor parallelism can split (graph/tensor_parallel.h).
struct TensorBlockRow {
  std::string module;
  bool attention = false;  // else an MLP
  int64_t ways = 0;        // the TP degrees it takes divide this (heads, or the MLP's width)
  int ops = 0;             // forward ops split
};

struct GraphPlanResponse {
  std::string model;
  std::string gpu_kind;
  int gpus = 0;                               // on the machine
  int64_t graph_batch = 0;                    // samples one run of the graph takes
  int64_t global_batch = 0;                   // samples a step
  std::vector<GraphPlanRow> rows;             // one per family that has a plan, best of it first
  int best = -1;                              // the fastest row that fits; -1 when none does
  std::vector<TensorBlockRow> tensor_blocks;  // what the tensor family splits, in graph order
  std::vector<std::string> notes;  // families not planned and why; what the model leaves out
  double search_s = 0;
};

// InvalidInput for a graph without a known batch, a global batch that is not a multiple of it, a
// cluster without GPUs, and the loaders' errors; a job no family fits is data (best = -1).
StatusOr<GraphPlanResponse> PlanGraph(const GraphPlanRequest& request);

// What `plan --model` (and dplace.plan) was given: a Hugging Face config.json (PlanJob, also when
// the file cannot be read: that path says why), Piper's input (PlanPiperFile), or another graph
// (PlanGraph).
enum class ModelKind { kConfig, kPiper, kGraph };
ModelKind KindOfModel(const std::string& path);

}  // namespace dplace::run
