// Plans in the terms other frameworks speak (docs/onnx.md):
//   device_map  module path -> device, as Hugging Face accelerate's `device_map` takes it: flat
//               (no key beside its ancestor), the coarsest modules that sit whole on one device,
//               so that every state_dict key has one key as its prefix. An op's module is that of
//               its parameters (ONNX initializers exported from PyTorch are state_dict keys),
//               else its scope ("/features/features.1/block/block.0/Conv" -> "features.1.block.0");
//               backward and update ops count with their forward op. A module split over devices
//               is mapped by its submodules and its own parameters (by name); a leaf module split
//               by its own ops goes where most of its FLOPs run and is reported. GPUs are written
//               as their index among the GPUs (accelerate's convention), CPUs as "cpu", other
//               devices by name; "" is the whole model.
//   stages      for a contiguous split: the stages in pipeline order (a device each; a topological
//               order of the devices under the forward edges), each with its entry (first forward
//               op fed from another stage, else its first forward op), last forward op and op
//               count, and the split points (the entries of every stage after the first) with their
//               modules (`split_modules`, OpModule), the split judged as its pipeline runs it
//               (`pipeline`: 1F1B over M micro-batches, its time per micro-batch, feasibility and
//               each stage's peak memory; `feasible`), and the split in the frameworks' own terms
//               (`frameworks`, framework_export.h).
#pragma once

#include <string>
#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/graph/modules.h"
#include "dplace/sim/pipeline_sim.h"
#include "dplace/sim/problem.h"

namespace dplace::io {

using graph::ModulePath;  // graph/modules.h
using graph::OpModule;

// `g` with each op that has no co-location group put in one per module, the module path cut to
// its first `depth` segments ("h.3.attn.c_attn" at depth 2: "h.3"), so that placers keep modules
// whole (`--unit module:DEPTH`): pipeline splits then fall on module boundaries. Ops of the root
// stay free. InvalidInput when no op names a module.
StatusOr<graph::Graph> GroupByModule(const graph::Graph& g, int depth);

// `g` with each op that has no co-location group put in one per repeated block or per module
// beside the blocks (`--unit blocks`): a block is a list's child ("layers.3", "encoder.block.5",
// "vision.blocks.1": graph::BlockOf) where the list has two or more, at whatever depth, each
// tower's its own; a module beside them is the module one level below the deepest module around a
// list that it lies in ("encoder.final_layer_norm", "vision.patch" beside
// "vision.encoder.blocks"), else its top-level module ("embed", "head"). The own ops of a module
// with modules inside it, and the root's, stay free. A split then falls between blocks and towers
// are never fused, without knowing the model's depth. InvalidInput when no op names a module.
StatusOr<graph::Graph> GroupByBlocks(const graph::Graph& g);

struct DeviceMap {
  Json map;                                // {module path or parameter name: device}
  std::vector<std::string> split_modules;  // one line per module split over devices
};
DeviceMap MakeDeviceMap(const sim::Problem& problem, const sim::Placement& placement);
// MakeDeviceMap(...).map.
Json DeviceMapJson(const sim::Problem& problem, const sim::Placement& placement);

// One stage of a simulated pipeline: its device's name, forward, backward and busy seconds, the
// micro-batches in flight at its peak, what it holds per micro-batch, its peak and its capacity
// (null: unlimited).
Json PipelineStageJson(const sim::Problem& problem, const sim::PipelineStage& stage);
// A simulated pipeline: its schedule, time, bubble, feasibility (with the reason when not) and
// stages (PipelineStageJson), as `simulate --pipeline --json`, the stages file and Python give it.
Json PipelineResultJson(const sim::Problem& problem, const sim::PipelineResult& result);

// The pipeline run is the problem's schedule (GPipe when its stage memory is GPipe's, else 1F1B)
// over its micro-batches (Problem::microbatches). InvalidInput when the placement is not a
// pipeline of contiguous stages, or, under the throughput objective (whose max-load model sends a
// CPU's tensors for free), has a CPU stage that is neither the first nor the last.
StatusOr<Json> StagesJson(const sim::Problem& problem, const sim::Placement& placement);

}  // namespace dplace::io
