// What one configuration of a job costs a rank: the time of a layer's forward and backward (by
// recomputation), of the embedding and of the head and loss, their activation bytes, the
// collectives of tensor, context and data parallelism and ZeRO, the pipeline's sends, the
// optimizer step. The job planner's search (job/search.h) puts stages together from these.
//
// The cost model (docs/planning.md, "Cost terms"): GEMMs at the datasheet's dense peak of the
// step's precision (FP8: the linear layers at the FP8 peak, attention and the rest at BF16's),
// memory-bound kernels (norms, residual adds, activations, dropout, rotary, softmax without flash
// attention, the optimizer step) at the HBM bandwidth, backward twice forward; collectives from
// cost/collectives.h. Calibrated efficiencies are not applied: times are a roofline, optimistic
// against measured runs.
#pragma once

#include <array>
#include <vector>

#include "dplace/hw/machine.h"
#include "dplace/job/plan.h"
#include "dplace/job/schedule.h"

namespace dplace::job {

// Everything of a plan but its stages. With `mixed_tp`, each stage takes its own TP degree t and
// DP degree d with t x d = tp x dp, its micro-batch's micro_batch x dp sequences split over its d
// (job/search.h's StageVariants); tp, dp and micro_batch are then the variant of least TP's.
struct Config {
  bool mixed_tp = false;
  int tp = 1, pp = 1, dp = 1, cp = 1, zero = 0;
  bool sequence_parallel = false;
  int micro_batch = 1, microbatches = 1, virtual_stages = 1;
  Schedule schedule = Schedule::k1F1B;
};

// Bytes per parameter a rank keeps (bf16 weights, fp32 gradients as Megatron-LM's main grads,
// fp32 master weights and Adam's two moments), before ZeRO shards them.
inline constexpr double kWeightBytes = 2, kGradientBytes = 4, kOptimizerBytes = 12;

struct Memory {
  double weights = 0, gradients = 0, optimizer = 0, activations = 0;
  double total() const { return weights + gradients + optimizer + activations; }
};

struct Costs {
  // Per micro-batch, per rank: one layer by recomputation, the embedding (first stage), the final
  // norm, head and loss (last stage). weight_s is the backward's weight-gradient part.
  std::array<Work, 3> layer;
  std::array<double, 3> layer_activation_bytes{};
  Work embedding, head;
  double embedding_activation_bytes = 0, head_activation_bytes = 0;
  // Of `layer` (forward and backward): tensor-parallel collectives, exposed; extra work of
  // recomputation (by mode).
  double layer_tp_s = 0;
  std::array<double, 3> layer_recompute_s{};
  // Parameters a rank holds: of a layer, of the embedding, of the last stage's norm and head (the
  // tied embedding's copy there when pp > 1).
  double layer_parameters = 0, embedding_parameters = 0, head_parameters = 0;
  double send_s = 0;  // an activation to the next stage, per micro-batch
  // Seconds a rank spends per parameter it holds: data-parallel gradient reduction (and ZeRO's
  // gather after the step), exposed part worked out by the caller; ZeRO-3's gathers per
  // micro-batch; the optimizer step.
  double reduce_s_per_parameter = 0, reduce_latency_s = 0;  // ZeRO 0 and 1: once a step
  double microbatch_reduce_s_per_parameter = 0;  // ZeRO 2 and 3: every micro-batch's backward
  double gather_s_per_parameter = 0;             // ZeRO 1 and 2: the new weights, after the step
  double zero3_s_per_parameter = 0;  // ZeRO-3: per micro-batch, gathers for forward and backward
  double optimizer_s_per_parameter = 0;
};

Costs CostsOf(const Job& job, const hw::Machine& m, const Config& c);

// A rank's resident bytes for `parameters` parameters under the config's ZeRO stage (sharded over
// dp x cp), ZeRO-3's gathered layers (`layer_parameters` each, two in flight) included.
Memory ResidentMemory(const Config& c, double parameters, double layer_parameters);

// Peak FLOP/s of a rank's GEMMs at the job's precision (0: the GPU has none at it).
double GemmPeak(const hw::Device& gpu, Dtype d);

}  // namespace dplace::job
