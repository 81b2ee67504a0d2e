#include "dplace/io/model_config.h"

#include <span>
#include <string_view>

#include "dplace/base/spelling.h"

namespace dplace::io {
namespace {

// How one family spells its sizes in config.json and what its layers are made of
// (transformers' configuration_*.py and modeling_*.py of each family).
struct Family {
  std::string_view model_type;
  std::string_view layers, hidden, heads, kv_heads, ffn, vocab, positions;  // "" if absent
  bool gated_mlp, tied_default, learned_positions, linear_bias, qkv_bias, layernorm_bias;
  std::string_view dropouts[3];  // keys of dropout probabilities ("" where fewer)
};

constexpr Family kConfigFamilies[] = {
    {"gpt2",
     "n_layer",
     "n_embd",
     "n_head",
     "",
     "n_inner",
     "vocab_size",
     "n_positions",
     false,
     true,
     true,
     true,
     false,
     true,
     {"attn_pdrop", "resid_pdrop", "embd_pdrop"}},
    {"gpt_neox",
     "num_hidden_layers",
     "hidden_size",
     "num_attention_heads",
     "",
     "intermediate_size",
     "vocab_size",
     "max_position_embeddings",
     false,
     false,
     false,
     true,
     false,
     true,
     {"attention_dropout", "hidden_dropout", ""}},
    {"llama",
     "num_hidden_layers",
     "hidden_size",
     "num_attention_heads",
     "num_key_value_heads",
     "intermediate_size",
     "vocab_size",
     "max_position_embeddings",
     true,
     false,
     false,
     false,
     false,
     false,
     {"attention_dropout", "", ""}},
    {"mistral",
     "num_hidden_layers",
     "hidden_size",
     "num_attention_heads",
     "num_key_value_heads",
     "intermediate_size",
     "vocab_size",
     "max_position_embeddings",
     true,
     false,
     false,
     false,
     false,
     false,
     {"attention_dropout", "", ""}},
    {"qwen2",
     "num_hidden_layers",
     "hidden_size",
     "num_attention_heads",
     "num_key_value_heads",
     "intermediate_size",
     "vocab_size",
     "max_position_embeddings",
     true,
     false,
     false,
     false,
     true,
     false,
     {"attention_dropout", "", ""}},
};

constexpr int64_t kMaxSize = int64_t{1} << 24;  // any size of a model one could train

StatusOr<int64_t> Size(const JsonNode& root, std::string_view key) {
  DPLACE_ASSIGN_OR_RETURN(JsonNode node, root.Field(key));
  DPLACE_ASSIGN_OR_RETURN(int64_t v, node.Integer());
  if (v < 1 || v > kMaxSize) return node.Error("must be between 1 and " + std::to_string(kMaxSize));
  return v;
}

}  // namespace

bool IsModelConfig(const Json& j) {
  return j.is_object() && j.contains("model_type") && !j.contains("format");
}

StatusOr<job::Transformer> ReadModelConfig(const JsonNode& root) {
  DPLACE_ASSIGN_OR_RETURN(JsonNode type_node, root.Field("model_type"));
  DPLACE_ASSIGN_OR_RETURN(std::string type, type_node.String());
  // Mixture of experts: the planner has no expert parallelism yet.
  for (const char* key : {"num_local_experts", "num_experts", "n_routed_experts"}) {
    if (auto experts = root.OptionalField(key)) {
      DPLACE_ASSIGN_OR_RETURN(int64_t n, experts->Integer());
      if (n > 1) {
        return experts->Error("a mixture-of-experts model (" + std::to_string(n) +
                              " experts): plan has no expert parallelism yet, so it plans dense "
                              "decoders only");
      }
    }
  }
  const Family* family = nullptr;
  std::vector<std::string> names;
  for (const Family& f : kConfigFamilies) {
    names.emplace_back(f.model_type);
    if (f.model_type == type) family = &f;
  }
  if (!family) {
    std::string list;
    for (const std::string& n : names) list += (list.empty() ? "" : ", ") + n;
    return type_node.Error("'" + type + "' is not a model_type plan reads" +
                           DidYouMean(type, names) + " (it reads " + list + ")");
  }
  job::Transformer m;
  m.name = type;
  DPLACE_ASSIGN_OR_RETURN(m.layers, Size(root, family->layers));
  DPLACE_ASSIGN_OR_RETURN(m.hidden, Size(root, family->hidden));
  DPLACE_ASSIGN_OR_RETURN(m.heads, Size(root, family->heads));
  m.kv_heads = m.heads;
  if (!family->kv_heads.empty() && root.Has(family->kv_heads)) {
    DPLACE_ASSIGN_OR_RETURN(m.kv_heads, Size(root, family->kv_heads));
  }
  if (root.Has("head_dim")) {
    DPLACE_ASSIGN_OR_RETURN(m.head_dim, Size(root, "head_dim"));
  } else {
    if (m.hidden % m.heads != 0) {
      return root.Error(std::string(family->hidden) + " " + std::to_string(m.hidden) +
                        " is not a multiple of " + std::string(family->heads) + " " +
                        std::to_string(m.heads));
    }
    m.head_dim = m.hidden / m.heads;
  }
  if (m.heads % m.kv_heads != 0) {
    return root.Error(std::string(family->heads) + " " + std::to_string(m.heads) +
                      " is not a multiple of " + std::string(family->kv_heads) + " " +
                      std::to_string(m.kv_heads));
  }
  // GPT-2's n_inner is null for 4 x n_embd.
  m.ffn = 4 * m.hidden;
  if (root.Has(family->ffn) || family->model_type != "gpt2") {
    DPLACE_ASSIGN_OR_RETURN(m.ffn, Size(root, family->ffn));
  }
  DPLACE_ASSIGN_OR_RETURN(m.vocab, Size(root, family->vocab));
  m.positions = 0;
  if (root.Has(family->positions)) {
    DPLACE_ASSIGN_OR_RETURN(m.positions, Size(root, family->positions));
  } else if (family->learned_positions) {
    DPLACE_RETURN_IF_ERROR(root.Field(family->positions).status());
  }
  m.gated_mlp = family->gated_mlp;
  m.tied_embeddings = family->tied_default;
  if (auto tied = root.OptionalField("tie_word_embeddings")) {
    DPLACE_ASSIGN_OR_RETURN(m.tied_embeddings, tied->Bool());
  }
  m.learned_positions = family->learned_positions;
  m.linear_bias = family->linear_bias;
  if (auto bias = root.OptionalField("attention_bias"); bias && family->model_type != "gpt2") {
    // Llama's attention_bias (False by default) or GPT-NeoX's (True): the attention's linears.
    DPLACE_ASSIGN_OR_RETURN(bool b, bias->Bool());
    if (family->linear_bias)
      m.linear_bias = b;
    else
      m.qkv_bias = b;
  }
  if (family->qkv_bias) m.qkv_bias = true;
  m.layernorm_bias = family->layernorm_bias;
  for (std::string_view key : family->dropouts) {
    if (key.empty()) continue;
    if (auto p = root.OptionalField(key)) {
      DPLACE_ASSIGN_OR_RETURN(double prob, p->Number());
      if (prob < 0 || prob >= 1) return p->Error("must be a probability in [0, 1)");
      if (prob > 0) m.dropout = true;
    }
  }
  return m;
}

}  // namespace dplace::io
