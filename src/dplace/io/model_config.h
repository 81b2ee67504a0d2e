// Hugging Face `config.json` of decoder transformers read into the job planner's layer model
// (job/transformer.h): GPT-2, GPT-NeoX, Llama, Mistral and Qwen2, with grouped-query attention,
// SwiGLU, tied or untied heads, biases and norms as each family has them (docs/planning.md,
// "Models").
#pragma once

#include "dplace/base/json_node.h"
#include "dplace/job/transformer.h"

namespace dplace::io {

// Whether a parsed document is a model config: an object with "model_type" and no "format".
bool IsModelConfig(const Json& j);

// The layer model of a config. InvalidInput naming the field for a missing or bad size, a
// model_type dplace does not read (with the ones it does), and mixture-of-experts configs
// (no expert parallelism yet).
StatusOr<job::Transformer> ReadModelConfig(const JsonNode& root);

}  // namespace dplace::io
