// A pipeline split in the terms of the frameworks that run pipelines (docs/pipelines.md), for
// models whose top level holds one list of repeated blocks ("layers.0" … "layers.N-1"):
//   torch.distributed.pipelining  split_spec {block FQN: "SplitPoint.BEGINNING"} (and torchtitan's
//                                 pipeline_parallel_split_points, the same FQNs);
//   DeepSpeed                     PipelineModule's layer list (the top-level modules before the
//                                 blocks, each block, those after) and its boundaries `parts`;
//   Megatron-LM                   num_layers_in_first/last_pipeline_stage and the
//                                 pipeline_model_parallel_layout string ("Et*3|t*4|t*3L");
//   vLLM                          VLLM_PP_LAYER_PARTITION, the blocks per stage ("3,4,3").
// It does not decide the split; it reads one (every block on one stage, stages in block order).
#pragma once

#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/sim/problem.h"

namespace dplace::io {

// The frameworks' terms of `placement`, whose stages are the devices `stages` in pipeline order.
// When the model has no list of repeated blocks, or the split cuts a block or leaves blocks out of
// order, {"reason": "..."} says why no framework can take it.
Json FrameworkSplits(const sim::Problem& problem, const sim::Placement& placement,
                     const std::vector<sim::DeviceId>& stages);

}  // namespace dplace::io
