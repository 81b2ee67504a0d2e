#include "dplace/job/transformer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <optional>

#include "dplace/job/costs.h"
#include "dplace/job/search.h"

namespace dplace::job {
namespace {

Transformer Gpt2Small() {
  return {.name = "gpt2",
          .layers = 12,
          .hidden = 768,
          .heads = 12,
          .kv_heads = 12,
          .head_dim = 64,
          .ffn = 3072,
          .vocab = 50257,
          .positions = 1024,
          .gated_mlp = false,
          .tied_embeddings = true,
          .learned_positions = true,
          .linear_bias = true,
          .qkv_bias = false,
          .layernorm_bias = true,
          .dropout = true};
}

Transformer Llama(int64_t layers, int64_t hidden, int64_t heads, int64_t kv_heads, int64_t ffn,
                  int64_t vocab) {
  return {.name = "llama",
          .layers = layers,
          .hidden = hidden,
          .heads = heads,
          .kv_heads = kv_heads,
          .head_dim = hidden / heads,
          .ffn = ffn,
          .vocab = vocab,
          .positions = 4096,
          .gated_mlp = true,
          .tied_embeddings = false,
          .learned_positions = false,
          .linear_bias = false,
          .qkv_bias = false,
          .layernorm_bias = false,
          .dropout = false};
}

// Parameter counts PyTorch gives for the Hugging Face models (sum of p.numel()).
TEST(TransformerTest, ParametersAreWhatPyTorchCountsForPublishedModels) {
  EXPECT_EQ(TotalParameters(Gpt2Small()), 124439808);                             // gpt2
  EXPECT_EQ(TotalParameters(Llama(32, 4096, 32, 32, 11008, 32000)), 6738415616);  // Llama-2-7b
  EXPECT_EQ(TotalParameters(Llama(32, 4096, 32, 8, 14336, 128256)), 8030261248);  // Llama-3-8B
  EXPECT_EQ(TotalParameters(Llama(32, 4096, 32, 8, 14336, 32000)), 7241732096);   // Mistral-7B
}

TEST(TransformerTest, FlopsAreMegatronsCount) {
  // Megatron-LM's num_floating_point_operations for GPT-3 175B at seq 2048 (no GQA, no SwiGLU):
  // 72 B s L h^2 (1 + s / 6h + V / 12 L h) per batch of B sequences (Narayanan et al. 2021's
  // Eq. 3 without recomputation: the logits' 6 B s h V counted once).
  Transformer m{.layers = 96,
                .hidden = 12288,
                .heads = 96,
                .kv_heads = 96,
                .head_dim = 128,
                .ffn = 49152,
                .vocab = 51200};
  const double s = 2048, L = 96, h = 12288, V = 51200;
  const double expected = 72 * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
  EXPECT_NEAR(ModelFlops(m, 2048, s) / expected, 1.0, 1e-12);
}

TEST(TransformerTest, ActivationsAreKorthikantisTableTwo) {
  // GPT-3 shapes: 34 s b h + 5 a s^2 b per layer with nothing parallel, (10 + 24/t + 5as/ht) s b h
  // with TP, 34 s b h / t with TP + SP + selective recomputation, 2 s b h for full.
  Transformer m = Gpt2Small();
  const double s = 1024, b = 4, h = 768, a = 12;
  const Sharding none{.flash_attention = false};
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, 1024, 4, none, Recompute::kNone),
                   s * b * h * 34 + 5 * a * s * s * b);
  const Sharding tp{.t = 4, .flash_attention = false};
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, 1024, 4, tp, Recompute::kNone),
                   s * b * h * (10 + 24.0 / 4 + 5 * a * s / (h * 4)));
  const Sharding tpsp{.t = 4, .sequence_parallel = true, .flash_attention = false};
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, 1024, 4, tpsp, Recompute::kSelective),
                   s * b * h * 34 / 4);
  EXPECT_DOUBLE_EQ(LayerActivationBytes(m, 1024, 4, none, Recompute::kFull), 2 * s * b * h);
}

// Megatron-LM's megatron/training/theoretical_memory_usage.py (compute_weight_and_optimizer_memory
// and compute_activation_memory), written out as the test's oracle: it assumes sequence
// parallelism and selective recomputation, a GPT without biases (LayerNorm with bias), and counts
// the first pipeline stage.
struct MegatronArgs {
  double layers, hidden, heads, groups, ffn, vocab, seq, micro_batch;
  double tp, pp, dp;
  std::optional<double> virtual_pp;
  bool distributed_optimizer;
  bool untie;
  double microbatches;
};

double MegatronTheoreticalMemory(const MegatronArgs& a) {
  const double transformer = 10 * a.layers * a.hidden * a.hidden *
                             ((1 + a.ffn / a.hidden) / 5.0 + a.groups / (5.0 * a.heads) +
                              2 / (5 * a.hidden) + 1 / (5 * a.layers * a.hidden));
  const double embedding = a.hidden * a.vocab;
  double shard = (transformer / a.pp + embedding) / a.tp;
  if (a.untie && a.pp == 1) shard += embedding / a.tp;
  const double per_parameter = a.distributed_optimizer ? 6 + 12 / a.dp : 18;
  const double weights = shard * per_parameter;
  double act = a.seq * a.micro_batch * a.hidden * (18 + 4 * (a.ffn / a.hidden)) * a.layers;
  act += 8 * a.seq * a.micro_batch * a.pp;
  act += a.seq * a.micro_batch * a.hidden * a.pp;
  if (a.virtual_pp) {
    act *= 1 + (a.pp - 1) / (a.pp * *a.virtual_pp);
  } else if (a.pp > 1) {
    act *= std::min(1.0, a.microbatches / a.pp);
  }
  if (a.pp == 1) act += a.seq * a.micro_batch * a.hidden * 4 * (1 + a.vocab / a.hidden);
  return weights + act / a.tp;
}

TEST(TransformerTest, FirstStageMemoryIsWithinFivePercentOfMegatronsTheoreticalMemory) {
  struct Case {
    int64_t layers, hidden, heads, vocab;
    int tp, pp, dp, b, v, zero;
    int64_t seq, batch;
  };
  const Case cases[] = {
      {24, 2048, 16, 51200, 1, 1, 8, 4, 1, 0, 2048, 256},     // 1.3B data parallel
      {24, 2048, 16, 51200, 2, 2, 2, 2, 1, 1, 2048, 64},      // TP 2 PP 2, distributed optimizer
      {40, 5120, 40, 51200, 8, 4, 2, 1, 1, 1, 2048, 128},     // 13B
      {96, 12288, 96, 51200, 8, 8, 4, 1, 2, 0, 2048, 512},    // 175B, interleaved 2
      {96, 12288, 96, 51200, 8, 16, 2, 1, 3, 1, 2048, 1536},  // 175B, interleaved 3
      {48, 6144, 48, 51200, 4, 4, 1, 2, 1, 0, 4096, 4},       // fewer micro-batches than stages
  };
  for (const Case& c : cases) {
    Transformer m{.name = "gpt",
                  .layers = c.layers,
                  .hidden = c.hidden,
                  .heads = c.heads,
                  .kv_heads = c.heads,
                  .head_dim = c.hidden / c.heads,
                  .ffn = 4 * c.hidden,
                  .vocab = c.vocab,
                  .positions = c.seq,
                  .tied_embeddings = true,
                  .learned_positions = false,
                  .linear_bias = false,
                  .layernorm_bias = true,
                  .dropout = true};
    hw::Machine machine;
    machine.gpu.memory_bytes = 1e15;
    machine.gpu.peak_flops_half = 1e15;
    machine.gpu.memory_bandwidth_bytes_per_s = 2e12;
    machine.levels = {{.name = "nvlink",
                       .size = c.tp * c.pp * c.dp,
                       .bandwidth_bytes_per_s = 3e11,
                       .latency_s = 3e-6}};
    const Job job{.model = m, .seq_len = c.seq, .global_batch = c.batch, .flash_attention = false};
    ParallelPlan plan{
        .tp = c.tp,
        .pp = c.pp,
        .dp = c.dp,
        .zero = c.zero,
        .sequence_parallel = true,
        .micro_batch = c.b,
        .microbatches = static_cast<int>(c.batch / (static_cast<int64_t>(c.b) * c.dp)),
        .virtual_stages = c.v,
        .schedule = c.v > 1 ? Schedule::kInterleaved : Schedule::k1F1B};
    const int stages = c.pp * c.v;
    for (int s = 0; s < stages; ++s) {
      const int n = static_cast<int>(c.layers / stages);
      plan.stages.push_back({.first_layer = s * n,
                             .layers = n,
                             .tp = c.tp,
                             .dp = c.dp,
                             .recompute = Recompute::kSelective});
    }
    const JudgedPlan j = Judge(job, machine, plan);
    const double oracle = MegatronTheoreticalMemory(
        {.layers = double(c.layers),
         .hidden = double(c.hidden),
         .heads = double(c.heads),
         .groups = double(c.heads),
         .ffn = 4.0 * c.hidden,
         .vocab = double(c.vocab),
         .seq = double(c.seq),
         .micro_batch = double(c.b),
         .tp = double(c.tp),
         .pp = double(c.pp),
         .dp = double(c.dp),
         .virtual_pp = c.v > 1 ? std::optional<double>(c.v) : std::nullopt,
         .distributed_optimizer = c.zero == 1,
         .untie = false,
         .microbatches = double(plan.microbatches)});
    const double ours = j.memory.front().total();
    std::printf("layers %lld tp %d pp %d dp %d v %d zero %d: %.4f of Megatron-LM's formula\n",
                static_cast<long long>(c.layers), c.tp, c.pp, c.dp, c.v, c.zero, ours / oracle);
    EXPECT_NEAR(ours / oracle, 1.0, 0.05)
        << "layers " << c.layers << " tp " << c.tp << " pp " << c.pp << " v " << c.v << ": " << ours
        << " against " << oracle;
  }
}

}  // namespace
}  // namespace dplace::job
