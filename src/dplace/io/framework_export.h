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
#include "dplace/sim/pipeline_sim.h"
#include "dplace/sim/problem.h"

namespace dplace::io {

// The frameworks' terms of `placement`, whose stages are the devices `stages` in pipeline order.
// When the model has no list of repeated blocks, or the split cuts a block or leaves blocks out of
// order, {"reason": "..."} says why no framework can take it.
Json FrameworkSplits(const sim::Problem& problem, const sim::Placement& placement,
                     const std::vector<sim::DeviceId>& stages);
// The same of a pipeline's stages (sim::StagesOf): under an interleaved plan each chunk a stage,
// in pipeline order (torch pipelining's and torchtitan's split points; Megatron's layout and
// virtual pipeline size; no DeepSpeed or vLLM terms, which run one stage a device).
Json FrameworkSplits(const sim::Problem& problem, const sim::PipelineStages& stages);

// A simulated pipeline's schedule and recomputation in the frameworks' terms:
//   torch.distributed.pipelining  its schedule class (Schedule1F1B, ScheduleGPipe,
//                                 ScheduleInterleaved1F1B, with the action table too), or for
//                                 the zero-bubble schedules the per-rank action table
//                                 ("0F0", "0I0", "0W0": stage, F/B/I/W, micro-batch) that
//                                 _PipelineScheduleRuntime loads from CSV, a row per rank;
//   torchtitan                    pipeline_parallel_schedule (or _schedule_csv for the table) and
//                                 activation_checkpoint.mode;
//   Megatron-LM                   --recompute-granularity/-method/-num-layers and
//                                 --virtual-pipeline-model-parallel-size;
//   DeepSpeed                     PipelineModule's activation_checkpoint_interval.
// Stages with replicas add "data_parallel": the degree and each pipeline's micro-batches
// (torchtitan's data_parallel_replicate_degree, Megatron-LM's data-parallel size, DeepSpeed's
// PipeDataParallelTopology and gradient_accumulation_steps), the ranks of a stage consecutive.
// What a framework cannot express (a schedule it does not run, recomputation on some stages only,
// stages of different degrees) is {"reason": "..."}.
Json FrameworkSchedule(const sim::PipelineResult& run);

}  // namespace dplace::io
