#include "dplace/io/job_export.h"

#include <sstream>

#include "dplace/base/json_node.h"

namespace dplace::io {
namespace {

using job::Recompute;
using job::Schedule;

// The one recomputation mode of every stage, or nullopt where they differ.
std::optional<Recompute> Alike(const job::ParallelPlan& plan) {
  std::optional<Recompute> mode;
  for (const job::StagePlan& s : plan.stages) {
    if (mode && *mode != s.recompute) return std::nullopt;
    mode = s.recompute;
  }
  return mode;
}

bool EvenStages(const job::ParallelPlan& plan) {
  for (const job::StagePlan& s : plan.stages) {
    if (s.layers != plan.stages.front().layers) return false;
  }
  return true;
}

std::string SameRecompute(const job::ParallelPlan& plan) {
  return Alike(plan) ? ""
                     : "the plan recomputes differently on different stages, and the "
                       "framework recomputes alike on every stage";
}

// Megatron-LM ------------------------------------------------------------------------------------

std::string MegatronConfig(const job::Job& job, const job::Config& c) {
  (void)job;
  if (c.zero >= 2) {
    return "Megatron-LM shards the optimizer state (--use-distributed-optimizer, ZeRO-1), not "
           "gradients or weights (ZeRO-" +
           std::to_string(c.zero) + ")";
  }
  if (c.pp > 1 && c.schedule != Schedule::k1F1B && c.schedule != Schedule::kInterleaved) {
    return "Megatron-LM runs 1F1B and interleaved 1F1B, not " +
           std::string(job::RowOf(c.schedule).name);
  }
  return "";
}

std::string MegatronStages(const job::ParallelPlan& plan) { return SameRecompute(plan); }

std::string MegatronWrite(const job::Job& job, const job::ParallelPlan& plan,
                          const std::string& header) {
  const job::Transformer& m = job.model;
  std::vector<std::pair<std::string, std::string>> flags = {
      {"--num-layers", std::to_string(m.layers)},
      {"--hidden-size", std::to_string(m.hidden)},
      {"--ffn-hidden-size", std::to_string(m.ffn)},
      {"--num-attention-heads", std::to_string(m.heads)},
      {"--kv-channels", std::to_string(m.head_dim)},
      {"--seq-length", std::to_string(job.seq_len)},
      {"--max-position-embeddings", std::to_string(std::max(m.positions, job.seq_len))},
      {"--vocab-size", std::to_string(m.vocab)}};
  if (m.kv_heads != m.heads) {
    flags.emplace_back("--group-query-attention", "");
    flags.emplace_back("--num-query-groups", std::to_string(m.kv_heads));
  }
  if (m.gated_mlp) flags.emplace_back("--swiglu", "");
  if (!m.tied_embeddings) flags.emplace_back("--untie-embeddings-and-output-weights", "");
  if (!m.layernorm_bias) flags.emplace_back("--normalization", "RMSNorm");
  flags.emplace_back("--position-embedding-type",
                     m.learned_positions ? "learned_absolute" : "rope");
  if (!m.linear_bias) flags.emplace_back("--disable-bias-linear", "");
  if (m.qkv_bias && !m.linear_bias) flags.emplace_back("--add-qkv-bias", "");
  if (!m.dropout) {
    flags.emplace_back("--attention-dropout", "0");
    flags.emplace_back("--hidden-dropout", "0");
  }
  flags.emplace_back(job.dtype == job::Dtype::kFp16 ? "--fp16" : "--bf16", "");
  if (job.dtype == job::Dtype::kFp8) flags.emplace_back("--fp8-format", "hybrid");
  flags.emplace_back("--tensor-model-parallel-size", std::to_string(plan.tp));
  flags.emplace_back("--pipeline-model-parallel-size", std::to_string(plan.pp));
  flags.emplace_back("--context-parallel-size", std::to_string(plan.cp));
  if (plan.sequence_parallel) flags.emplace_back("--sequence-parallel", "");
  if (plan.pp > 1) {
    // Megatron-LM works the virtual stages out from the layers per virtual stage or the layout.
    if (plan.virtual_stages > 1 && EvenStages(plan)) {
      flags.emplace_back("--num-layers-per-virtual-pipeline-stage",
                         std::to_string(plan.stages.front().layers));
    } else if (!EvenStages(plan)) {
      flags.emplace_back("--pipeline-model-parallel-layout", "\"" + MegatronLayout(plan) + "\"");
    }
  }
  if (const auto mode = Alike(plan); mode && *mode != Recompute::kNone) {
    flags.emplace_back("--recompute-granularity", job::RecomputeName(*mode));
    if (*mode == Recompute::kFull) {
      flags.emplace_back("--recompute-method", "uniform");
      flags.emplace_back("--recompute-num-layers", "1");
    }
  }
  flags.emplace_back("--micro-batch-size", std::to_string(plan.micro_batch));
  flags.emplace_back("--global-batch-size", std::to_string(job.global_batch));
  if (plan.zero >= 1) flags.emplace_back("--use-distributed-optimizer", "");
  if (plan.dp * plan.cp > 1) {
    flags.emplace_back("--overlap-grad-reduce", "");
    if (plan.zero >= 1) flags.emplace_back("--overlap-param-gather", "");
  }
  std::string out;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) out += "# " + line + "\n";
  out += "# " + std::to_string(plan.gpus()) + " GPUs: data-parallel size " +
         std::to_string(plan.dp) + " follows from the world size\n";
  for (size_t i = 0; i < flags.size(); ++i) {
    out += flags[i].first + (flags[i].second.empty() ? "" : " " + flags[i].second) +
           (i + 1 < flags.size() ? " \\\n" : "\n");
  }
  return out;
}

// torchtitan -------------------------------------------------------------------------------------

std::string TitanConfig(const job::Job& job, const job::Config& c) {
  (void)job;
  if (c.zero == 1) {
    return "torchtitan shards optimizer state only with FSDP (ZeRO-2 or ZeRO-3), not ZeRO-1";
  }
  if (c.tp > 1 && !c.sequence_parallel) {
    return "torchtitan's tensor parallelism always shards the norms' sequence (sequence "
           "parallelism)";
  }
  if (c.pp > 1 && (c.schedule == Schedule::kZbH1 || c.schedule == Schedule::kZbH2)) {
    return "torchtitan's zero-bubble schedules run several stages a rank, not " +
           std::string(job::RowOf(c.schedule).name);
  }
  return "";
}

std::string TitanStages(const job::ParallelPlan& plan) {
  if (auto same = SameRecompute(plan); !same.empty()) return same;
  if (Alike(plan) == Recompute::kSelective) {
    return "torchtitan's selective checkpointing keeps matrix products and recomputes the rest, "
           "not attention's core only";
  }
  return "";
}

std::string TitanWrite(const job::Job& job, const job::ParallelPlan& plan,
                       const std::string& header) {
  std::ostringstream out;
  std::istringstream lines(header);
  for (std::string line; std::getline(lines, line);) out << "# " << line << "\n";
  const int shard = plan.zero >= 2 ? plan.dp : 1;
  const int replicate = plan.zero >= 2 ? 1 : plan.dp;
  out << "[training]\n"
      << "local_batch_size = " << job.global_batch / plan.dp << "\n"
      << "global_batch_size = " << job.global_batch << "\n"
      << "seq_len = " << job.seq_len << "\n"
      << "mixed_precision_param = \"bfloat16\"\n\n"
      << "[parallelism]\n"
      << "data_parallel_replicate_degree = " << replicate << "\n"
      << "data_parallel_shard_degree = " << shard << "\n";
  if (plan.zero == 2) out << "fsdp_reshard_after_forward = \"never\"\n";
  out << "tensor_parallel_degree = " << plan.tp << "\n"
      << "context_parallel_degree = " << plan.cp << "\n"
      << "pipeline_parallel_degree = " << plan.pp << "\n";
  if (plan.pp > 1) {
    const char* schedule = plan.schedule == Schedule::kInterleaved ? "Interleaved1F1B"
                           : plan.schedule == Schedule::kGPipe     ? "GPipe"
                                                                   : "1F1B";
    out << "pipeline_parallel_schedule = \"" << schedule << "\"\n"
        << "pipeline_parallel_microbatch_size = " << plan.micro_batch << "\n";
    if (EvenStages(plan)) {
      out << "pipeline_parallel_layers_per_stage = " << plan.stages.front().layers << "\n";
    } else {
      out << "pipeline_parallel_split_points = [";
      for (size_t s = 1; s < plan.stages.size(); ++s) {
        out << (s > 1 ? ", " : "") << "\"layers." << plan.stages[s].first_layer << "\"";
      }
      out << "]\n";
    }
  }
  const auto mode = Alike(plan).value_or(Recompute::kNone);
  out << "\n[activation_checkpoint]\nmode = \"" << (mode == Recompute::kFull ? "full" : "none")
      << "\"\n";
  if (job.dtype == job::Dtype::kFp8) out << "\n[model]\nconverters = [\"float8\"]\n";
  return out.str();
}

// DeepSpeed --------------------------------------------------------------------------------------

std::string SpeedConfig(const job::Job& job, const job::Config& c) {
  (void)job;
  if (c.pp > 1 && c.zero >= 2) {
    return "DeepSpeed's pipeline engine refuses ZeRO-2 and ZeRO-3 (ZeRO-" + std::to_string(c.zero) +
           ")";
  }
  if (c.pp > 1 && c.schedule != Schedule::k1F1B) {
    return "DeepSpeed's pipeline engine runs its own 1F1B, not " +
           std::string(job::RowOf(c.schedule).name);
  }
  if (c.tp > 1 && c.pp > 1) return "DeepSpeed's AutoTP does not run with its pipeline engine";
  if (c.tp > 1 && c.sequence_parallel) {
    return "DeepSpeed's AutoTP has no Megatron-style sequence parallelism";
  }
  if (c.cp > 1) return "DeepSpeed has no ring-attention context parallelism";
  if (job.dtype == job::Dtype::kFp8) return "DeepSpeed's config has no FP8 linear layers";
  return "";
}

std::string SpeedStages(const job::ParallelPlan& plan) {
  if (auto same = SameRecompute(plan); !same.empty()) return same;
  if (Alike(plan) == Recompute::kSelective) {
    return "DeepSpeed checkpoints whole layers, not attention's core";
  }
  if (plan.pp > 1 && !EvenStages(plan)) {
    return "DeepSpeed's PipelineModule partitions layers uniformly (or by parameters), not at "
           "given layers";
  }
  return "";
}

std::string SpeedWrite(const job::Job& job, const job::ParallelPlan& plan,
                       const std::string& header) {
  (void)header;  // JSON has no comments: the planner prints it
  Json j = {{"train_batch_size", job.global_batch},
            {"train_micro_batch_size_per_gpu", plan.micro_batch},
            {"gradient_accumulation_steps", plan.microbatches},
            {"gradient_clipping", 1.0},
            {"zero_optimization", {{"stage", plan.zero}}}};
  j[job.dtype == job::Dtype::kFp16 ? "fp16" : "bf16"] = {{"enabled", true}};
  if (plan.tp > 1) j["tensor_parallel"] = {{"autotp_size", plan.tp}};
  const auto mode = Alike(plan).value_or(Recompute::kNone);
  if (plan.pp > 1) {
    j["pipeline"] = {{"stages", plan.pp},
                     {"partition", "uniform"},
                     {"activation_checkpoint_interval", mode == Recompute::kFull ? 1 : 0}};
  } else if (mode == Recompute::kFull) {
    j["activation_checkpointing"] = {{"partition_activations", false},
                                     {"contiguous_memory_optimization", false}};
  }
  return j.dump(2) + "\n";
}

constexpr JobExportRow kRows[] = {
    {"megatron", "Megatron-LM's command-line arguments (pretrain_gpt.py)", MegatronConfig,
     MegatronStages, false, MegatronWrite},
    {"torchtitan", "torchtitan's TOML job config", TitanConfig, TitanStages, false, TitanWrite},
    {"deepspeed", "DeepSpeed's JSON config", SpeedConfig, SpeedStages, true, SpeedWrite},
};

}  // namespace

std::span<const JobExportRow> JobExportTable() { return kRows; }

const JobExportRow* FindJobExport(std::string_view name) {
  for (const JobExportRow& row : kRows) {
    if (row.name == name) return &row;
  }
  return nullptr;
}

std::string JobExportRefusal(const JobExportRow& row, const job::Job& job,
                             const job::ParallelPlan& plan) {
  const job::Config c = job::ConfigOf(plan);
  if (c.mixed_tp) {
    return "every pipeline stage takes one tensor-parallel degree there; this plan's stages take "
           "their own";
  }
  if (std::string why = row.config_refused(job, c); !why.empty()) return why;
  return row.stages_refused(plan);
}

std::string MegatronLayout(const job::ParallelPlan& plan) {
  std::string out;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    if (s > 0) out += "|";
    if (s == 0) out += "E";
    const int n = plan.stages[s].layers;
    if (n == 1)
      out += "t";
    else if (n > 1)
      out += "t*" + std::to_string(n);
    if (s + 1 == plan.stages.size()) out += "L";
  }
  return out;
}

}  // namespace dplace::io
