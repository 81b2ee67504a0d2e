#include "dplace/job/costs.h"

#include <algorithm>

#include "dplace/cost/collectives.h"

namespace dplace::job {

const char* DtypeName(Dtype d) {
  switch (d) {
    case Dtype::kBf16:
      return "bf16";
    case Dtype::kFp16:
      return "fp16";
    case Dtype::kFp8:
      return "fp8";
  }
  return "?";
}

double GemmPeak(const hw::Device& gpu, Dtype d) {
  const double half = gpu.peak_flops_half > 0 ? gpu.peak_flops_half : gpu.peak_flops;
  return d == Dtype::kFp8 ? gpu.peak_flops_fp8 : half;
}

Memory ResidentMemory(const Config& c, double parameters, double layer_parameters) {
  const double shard = static_cast<double>(c.dp) * c.cp;
  Memory m;
  m.weights = parameters * kWeightBytes / (c.zero >= 3 ? shard : 1);
  if (c.zero >= 3 && shard > 1) m.weights += 2 * layer_parameters * kWeightBytes;
  m.gradients = parameters * kGradientBytes / (c.zero >= 2 ? shard : 1);
  m.optimizer = parameters * kOptimizerBytes / (c.zero >= 1 ? shard : 1);
  return m;
}

Costs CostsOf(const Job& job, const hw::Machine& m, const Config& c) {
  const Transformer& model = job.model;
  const hw::Device& gpu = m.gpu;
  const double e = 2;  // bytes per activation element (bf16/fp16; FP8 runs keep bf16 activations)
  const double half = GemmPeak(gpu, Dtype::kBf16);
  const double gemm_peak = GemmPeak(gpu, job.dtype);
  const double hbm = gpu.memory_bandwidth_bytes_per_s;
  const double t = c.tp;
  const double sp = c.sequence_parallel ? t : 1;  // what SP shards, else replicated on TP ranks
  const double tokens = static_cast<double>(job.seq_len) * c.micro_batch / c.cp;
  const double h = model.hidden, f = model.ffn, q = model.q_size(), kv = model.kv_size();
  const double a = model.heads, s = job.seq_len, V = model.vocab;

  // Collective groups in Megatron-LM's rank order: TP fastest, then CP, DP, PP.
  const auto tp_span = hw::GroupSpan(m, 1, c.tp);
  const auto cp_span = hw::GroupSpan(m, c.tp, c.cp);
  const auto dp_span = hw::GroupSpan(m, c.tp * c.cp, c.dp * c.cp);  // gradients: over dp x cp
  const int pp_level = c.tp * c.cp * c.dp >= m.gpus_per_node() && m.levels.size() > 1 ? 1 : 0;
  const double hidden_bytes = e * tokens * h;  // a rank's tokens' hidden states, whole
  // TP: per layer, forward and backward each two all-reduces (SP: all-gather + reduce-scatter).
  double tp_pair = 0;
  if (c.tp > 1) {
    tp_pair =
        c.sequence_parallel
            ? cost::CollectiveTime(cost::Collective::kAllGather, hidden_bytes, tp_span, m) +
                  cost::CollectiveTime(cost::Collective::kReduceScatter, hidden_bytes, tp_span, m)
            : cost::CollectiveTime(cost::Collective::kAllReduce, hidden_bytes, tp_span, m);
  }
  const double tp_forward = 2 * tp_pair;

  Costs out;
  // A layer's forward on this rank.
  const double gemm = tokens * LayerGemmFlopsPerToken(model) / t / gemm_peak;
  const double attention = tokens * AttentionFlopsPerToken(model, job.seq_len) / t / half;
  const double dropout_bytes = model.dropout ? 2 * (2 * e + 1) * tokens * h : 0;
  const double sharded_bytes = 4 * e * tokens * h + 6 * e * tokens * h + dropout_bytes;
  double split_bytes = (model.gated_mlp ? 3 : 2) * e * tokens * f;
  if (!model.learned_positions) split_bytes += 2 * e * tokens * (q + kv);  // rotary on Q and K
  double softmax_bytes = 0;
  if (!job.flash_attention)
    softmax_bytes = (2 * e + (model.dropout ? 2 * e + 1 : 0)) * a * s * tokens;
  const double elementwise = (sharded_bytes / sp + (split_bytes + softmax_bytes) / t) / hbm;
  // CP: ring attention passes K and V round the group under attention's compute.
  double cp_forward = 0;
  if (c.cp > 1) {
    const int level = cp_span.size() > 1 && cp_span[1] > 1 ? 1 : 0;
    const double pass = (c.cp - 1) * cost::SendTime(2 * e * tokens * kv / t, level, m);
    cp_forward = std::max(0.0, pass - attention);
  }
  const double forward = gemm + attention + elementwise + tp_forward + cp_forward;
  const double core = attention + softmax_bytes / t / hbm;  // what selective recomputation redoes
  for (Recompute r : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    const double extra = r == Recompute::kFull ? forward : r == Recompute::kSelective ? core : 0;
    Work& w = out.layer[static_cast<size_t>(r)];
    w.forward_s = forward;
    w.backward_s = gemm + 2 * attention + 2 * elementwise + tp_forward + 2 * cp_forward + extra;
    w.weight_s = gemm;
    out.layer_recompute_s[static_cast<size_t>(r)] = extra;
    out.layer_activation_bytes[static_cast<size_t>(r)] =
        LayerActivationBytes(model, job.seq_len, c.micro_batch,
                             {.t = c.tp,
                              .sequence_parallel = c.sequence_parallel,
                              .c = c.cp,
                              .flash_attention = job.flash_attention,
                              .element_bytes = e},
                             r);
  }
  out.layer_tp_s = 2 * tp_forward;

  // Embedding: a gather (and its dropout); vocab-parallel under TP, joined by one collective.
  const double embed_bytes = (e * tokens * h + (model.dropout ? (2 * e + 1) * tokens * h : 0)) / sp;
  out.embedding.forward_s = embed_bytes / hbm + tp_pair;
  out.embedding.backward_s = 0;
  out.embedding.weight_s = 2 * e * tokens * h / sp / hbm;  // the scatter-add of its gradient
  out.embedding_activation_bytes = 8 * tokens + (model.dropout ? tokens * h / sp : 0);
  // Final norm, head (vocab-parallel) and cross-entropy over this rank's share of the logits.
  const double head_gemm = tokens * HeadFlopsPerToken(model) / t / gemm_peak;
  const double loss_bytes = 3 * 4 * tokens * V / t;
  out.head.forward_s = head_gemm + (4 * e * tokens * h / sp + loss_bytes) / hbm + tp_pair / 2;
  out.head.backward_s = head_gemm + (8 * e * tokens * h / sp + loss_bytes) / hbm + tp_pair / 2;
  out.head.weight_s = head_gemm;
  out.head_activation_bytes = 2 * e * tokens * h / sp + 4 * tokens * V / t;

  out.layer_parameters = LayerParameters(model) / t;
  out.embedding_parameters = EmbeddingParameters(model) / t;
  out.head_parameters =
      (FinalNormParameters(model) +
       (model.tied_embeddings ? (c.pp > 1 ? static_cast<double>(model.vocab) * model.hidden : 0)
                              : HeadParameters(model))) /
      t;
  out.send_s = cost::SendTime(e * tokens * h / sp, pp_level, m);

  // Data parallelism over dp x cp ranks, fp32 gradients:
  // - ZeRO 0 all-reduces them, ZeRO 1 reduce-scatters them, once a step after the last backward;
  // - ZeRO 2 and 3 keep only their shard, so every micro-batch's backward reduce-scatters them
  //   (as DeepSpeed's ZeRO-2 and FSDP do under gradient accumulation);
  // - ZeRO 1 and 2 all-gather the updated bf16 weights after the step; ZeRO 3 gathers each
  //   micro-batch's weights for forward and again for backward.
  const int group = c.dp * c.cp;
  if (group > 1) {
    using cost::Collective;
    // The collectives are affine in their bytes: latency, then the slope per parameter.
    const double big = 1e9;
    auto per_parameter = [&](Collective kind, double bytes) {
      return (cost::CollectiveTime(kind, big * bytes, dp_span, m) -
              cost::CollectiveTime(kind, 0, dp_span, m)) /
             big;
    };
    const Collective reduce = c.zero >= 1 ? Collective::kReduceScatter : Collective::kAllReduce;
    out.reduce_latency_s = cost::CollectiveTime(reduce, 0, dp_span, m);
    if (c.zero <= 1) out.reduce_s_per_parameter = per_parameter(reduce, kGradientBytes);
    if (c.zero >= 2) {
      out.microbatch_reduce_s_per_parameter =
          per_parameter(Collective::kReduceScatter, kGradientBytes);
    }
    if (c.zero == 1 || c.zero == 2) {
      out.gather_s_per_parameter = per_parameter(Collective::kAllGather, kWeightBytes);
    }
    if (c.zero >= 3)
      out.zero3_s_per_parameter = 2 * per_parameter(Collective::kAllGather, kWeightBytes);
  }
  // Adam: read and write the fp32 master weight and both moments, read the gradient (and once more
  // for clipping's norm), write the bf16 weight: 34 bytes per parameter this rank updates.
  out.optimizer_s_per_parameter = 34 / hbm / (c.zero >= 1 ? static_cast<double>(group) : 1);
  return out;
}

}  // namespace dplace::job
