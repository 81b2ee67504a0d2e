// A decoder transformer as the job planner sees it: embedding, L identical layers, head and loss,
// with the published formulas for its parameters, FLOPs and activation bytes.
//
// FLOPs follow Megatron-LM's num_floating_point_operations (Narayanan et al. 2021, Eq. 3,
// generalised to grouped-query attention and gated MLPs as Megatron-LM does): a GEMM of m x k by
// k x n is 2mkn, attention's two batched GEMMs are counted in full (no causal halving), backward is
// twice forward. Activation bytes follow Korthikanti et al. 2022 ("Reducing Activation
// Recomputation in Large Transformer Models", Sec. 4 and Table 2), term by term, generalised to
// grouped-query attention (K and V of kv_heads), gated MLPs (SwiGLU keeps its two input halves and
// the down projection's input, as Megatron-LM's fused swiglu does), no dropout (no masks) and
// flash attention (no s^2 terms: the output and its log-sum-exp instead).
#pragma once

#include <cstdint>
#include <string>

namespace dplace::job {

struct Transformer {
  std::string name;  // the config's model_type (gpt2, llama, ...) or the file's stem
  int64_t layers = 0;
  int64_t hidden = 0;
  int64_t heads = 0;
  int64_t kv_heads = 0;  // grouped-query attention: K and V heads (= heads without GQA)
  int64_t head_dim = 0;  // per head (hidden / heads unless the config says)
  int64_t ffn = 0;       // the MLP's inner size
  int64_t vocab = 0;
  int64_t positions = 0;           // max_position_embeddings (learned positions: a table)
  bool gated_mlp = false;          // SwiGLU: gate, up and down matrices (Llama, Mistral, Qwen2)
  bool tied_embeddings = true;     // the head reuses the embedding's matrix
  bool learned_positions = false;  // GPT-2's position table (else rotary: no parameters)
  bool linear_bias = false;        // every linear layer has a bias (GPT-2, GPT-NeoX)
  bool qkv_bias = false;           // only Q, K, V have biases (Qwen2)
  bool layernorm_bias = true;      // LayerNorm (weight and bias); false: RMSNorm (weight)
  bool dropout = false;            // attention and hidden dropout > 0: their masks are kept

  int64_t q_size() const { return heads * head_dim; }
  int64_t kv_size() const { return kv_heads * head_dim; }
};

// Parameters of one transformer layer (attention, MLP, their biases and two norms).
double LayerParameters(const Transformer& m);
// Parameters of the embedding (and learned positions), of the final norm and of the head (0 when
// tied), and of the whole model.
double EmbeddingParameters(const Transformer& m);
double FinalNormParameters(const Transformer& m);
double HeadParameters(const Transformer& m);
double TotalParameters(const Transformer& m);

// Forward FLOPs of one layer for one token at sequence length `seq`: its GEMMs, and attention's
// two batched GEMMs (4 seq q_size, in full).
double LayerGemmFlopsPerToken(const Transformer& m);
double AttentionFlopsPerToken(const Transformer& m, int64_t seq);
// Forward FLOPs of the head (logits) for one token.
double HeadFlopsPerToken(const Transformer& m);
// Model FLOPs of one training iteration of `tokens` tokens at `seq` (3x forward: Megatron-LM's
// num_floating_point_operations).
double ModelFlops(const Transformer& m, int64_t seq, double tokens);

enum class Recompute { kNone, kSelective, kFull };
const char* RecomputeName(Recompute r);

// How one rank runs a layer: tensor-parallel degree t, sequence parallelism (SP), context
// parallelism c (a c-th of the sequence), flash attention, bytes per activation element.
struct Sharding {
  int t = 1;
  bool sequence_parallel = false;
  int c = 1;
  bool flash_attention = true;
  double element_bytes = 2;
};

// Bytes one rank keeps of one layer's forward for its backward, per micro-batch of `micro_batch`
// sequences of `seq` tokens (Korthikanti et al. 2022, generalised as the file comment says).
double LayerActivationBytes(const Transformer& m, int64_t seq, int64_t micro_batch,
                            const Sharding& s, Recompute r);

}  // namespace dplace::job
