// A parallel plan of a training job: one value for everything `dplace plan` chooses.
//
// Per stage: its layers, tensor- and data-parallel degrees, recomputation; for the job: pipeline
// and context-parallel degrees, ZeRO stage, sequence parallelism, micro-batch size, schedule and
// virtual stages. Ranks are numbered as Megatron-LM numbers them (tensor-parallel fastest, then
// context, data, pipeline). run/plan_job.h parses and checks the user's --fix against it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/job/schedule.h"
#include "dplace/job/transformer.h"

namespace dplace::job {

enum class Dtype { kBf16, kFp16, kFp8 };
const char* DtypeName(Dtype d);

struct StagePlan {
  int first_layer = 0;  // transformer layers [first_layer, first_layer + layers)
  int layers = 0;
  int tp = 1, dp = 1;
  Recompute recompute = Recompute::kNone;
};

struct ParallelPlan {
  int tp = 1, pp = 1, dp = 1, cp = 1;
  int zero = 0;  // 0 none, 1 optimizer state, 2 + gradients, 3 + weights (FSDP full shard)
  bool sequence_parallel = false;
  int micro_batch = 1;     // sequences per micro-batch
  int microbatches = 1;    // per pipeline and step: global batch / (micro_batch x dp)
  int virtual_stages = 1;  // chunks per pipeline rank (interleaved)
  Schedule schedule = Schedule::k1F1B;
  // Virtual stages in pipeline order (pp x virtual_stages): stage k * pp + i runs on rank i.
  std::vector<StagePlan> stages;

  int gpus() const { return tp * pp * dp * cp; }
};

// The job the plan is for.
struct Job {
  Transformer model;
  int64_t seq_len = 0;
  int64_t global_batch = 0;  // sequences per step
  Dtype dtype = Dtype::kBf16;
  bool flash_attention = true;
  bool tp_across_nodes = false;  // a TP group may leave its NVLink domain
};

}  // namespace dplace::job
