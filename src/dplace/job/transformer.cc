#include "dplace/job/transformer.h"

namespace dplace::job {
namespace {

double NormParameters(const Transformer& m) {
  return static_cast<double>(m.hidden) * (m.layernorm_bias ? 2 : 1);
}

double MlpMatrices(const Transformer& m) { return m.gated_mlp ? 3 : 2; }

}  // namespace

double LayerParameters(const Transformer& m) {
  const double h = m.hidden, q = m.q_size(), kv = m.kv_size(), f = m.ffn;
  double p = h * (q + 2 * kv) + q * h + MlpMatrices(m) * h * f;
  if (m.linear_bias) p += (q + 2 * kv) + h + (m.gated_mlp ? 2 * f : f) + h;
  if (m.qkv_bias && !m.linear_bias) p += q + 2 * kv;
  return p + 2 * NormParameters(m);
}

double EmbeddingParameters(const Transformer& m) {
  double p = static_cast<double>(m.vocab) * m.hidden;
  if (m.learned_positions) p += static_cast<double>(m.positions) * m.hidden;
  return p;
}

double FinalNormParameters(const Transformer& m) { return NormParameters(m); }

double HeadParameters(const Transformer& m) {
  return m.tied_embeddings ? 0 : static_cast<double>(m.vocab) * m.hidden;
}

double TotalParameters(const Transformer& m) {
  return m.layers * LayerParameters(m) + EmbeddingParameters(m) + FinalNormParameters(m) +
         HeadParameters(m);
}

double LayerGemmFlopsPerToken(const Transformer& m) {
  const double h = m.hidden, q = m.q_size(), kv = m.kv_size(), f = m.ffn;
  return 2 * (h * (q + 2 * kv) + q * h + MlpMatrices(m) * h * f);
}

double AttentionFlopsPerToken(const Transformer& m, int64_t seq) {
  return 4.0 * static_cast<double>(seq) * m.q_size();
}

double HeadFlopsPerToken(const Transformer& m) { return 2.0 * m.hidden * m.vocab; }

double ModelFlops(const Transformer& m, int64_t seq, double tokens) {
  const double layer = LayerGemmFlopsPerToken(m) + AttentionFlopsPerToken(m, seq);
  return 3 * tokens * (m.layers * layer + HeadFlopsPerToken(m));
}

const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

double LayerActivationBytes(const Transformer& m, int64_t seq, int64_t micro_batch,
                            const Sharding& s, Recompute r) {
  const double e = s.element_bytes;
  const double tokens = static_cast<double>(seq) * micro_batch / s.c;  // this rank's tokens
  const double h = m.hidden, q = m.q_size(), kv = m.kv_size(), f = m.ffn;
  const double t = s.t;
  // What SP shards (else every TP rank holds it whole): the two norms' inputs, the inputs of the
  // QKV and first MLP GEMMs (the norms' outputs), the two hidden dropout masks.
  const double sp = s.sequence_parallel ? t : 1;
  if (r == Recompute::kFull) return e * tokens * h / sp;  // the layer's input
  const double masks = m.dropout ? 2 * tokens * h : 0;
  const double replicated = e * tokens * h * 4 + masks;
  // What TP shards: Q, K, V, the output projection's input, the MLP's inner tensors.
  double split =
      e * tokens * (q + 2 * kv) + e * tokens * q + (m.gated_mlp ? 3 : 2) * e * tokens * f;
  // Attention's core: softmax output (and dropout mask and output), a * seq per token, or with
  // flash attention the log-sum-exp (fp32) per head and token (its output is the projection's
  // input, counted above). Selective recomputation drops it (Korthikanti et al.'s 5as/h term).
  if (r != Recompute::kSelective) {
    const double scores = static_cast<double>(m.heads) * seq * tokens;
    split += s.flash_attention ? 4.0 * m.heads * tokens
                               : (m.dropout ? (2 * e + 1) * scores : e * scores);
  }
  return replicated / sp + split / t;
}

}  // namespace dplace::job
