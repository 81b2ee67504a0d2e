// Planning a training job (`dplace plan`, dplace.plan): the request as the user gives it, checked
// once (the model config, the machine, the batch and sequence, --fix), the search
// (job/search.h), why the winner won, and the frameworks' settings of the best plan each can run.
// The CLI and Python both call PlanJob.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/hw/machine.h"
#include "dplace/job/piper.h"
#include "dplace/job/search.h"

namespace dplace::run {

struct PlanRequest {
  std::string model;         // a Hugging Face config.json
  std::string cluster;       // a preset (dgx-h100), NAME:N for N nodes, or a dplace-cluster/1 file
  int64_t global_batch = 0;  // sequences per step (required)
  int64_t seq_len = 0;       // tokens per sequence (required)
  std::string dtype = "bf16";  // bf16 | fp16 | fp8
  std::string fix;             // KEY=VALUE,... (ParseFix)
  bool tp_across_nodes = false;
  bool flash_attention = true;
  std::vector<std::string> exports;  // frameworks whose settings are wanted (io/job_export.h)
};

// The settings of one framework: its best plan, and why the overall best is not it (empty when
// it is).
struct FrameworkPlan {
  std::string framework;
  std::string refusal;                  // why it cannot run the best plan
  std::optional<job::JudgedPlan> plan;  // the best it can run (none: it can run no plan that fits)
  std::string content;                  // the file
};

struct PlanResponse {
  job::Job job;
  hw::Machine machine;
  job::SearchResult result;
  // The plan judged or chosen (result.best; with a fully fixed plan that does not fit, that
  // plan, infeasible).
  std::optional<job::JudgedPlan> chosen;
  std::string why;  // why the winner beat the runner-up, one line
  std::vector<FrameworkPlan> exports;
  double search_s = 0;
};

// Parses --fix: comma-separated KEY=VALUE of tp, pp, dp, cp, zero (0-3), sp (on|off), mbs,
// vp, schedule (1f1b|interleaved|gpipe|zb-h1|zb-h2), recompute (none|selective|full). InvalidInput
// for an unknown key (with "did you mean"), a repeated key or a value out of range.
StatusOr<job::Fixed> ParseFix(std::string_view text);

// Loads the model and machine, checks the request against them (degrees that contradict the GPUs,
// the heads, the batch, the node size or the layers; one line each) and plans. InvalidInput when
// nothing fits and nothing is fixed (saying the least memory a GPU would need).
StatusOr<PlanResponse> PlanJob(const PlanRequest& request);

// Piper's input (NeurIPS 2021) planned by Piper's DP (job/piper.h), the file's machine unless
// `devices` (> 0), `memory_bytes` or `bandwidth` (> 0) say otherwise.
struct PiperRequest {
  std::string path;
  int devices = 0;
  double memory_bytes = 0, bandwidth_bytes_per_s = 0;
};
struct PiperResponse {
  job::PiperInstance instance;
  job::PiperPlan plan;
  double search_s = 0;
};
bool IsPiperFile(const std::string& path);
StatusOr<PiperResponse> PlanPiperFile(const PiperRequest& request);

// A model and machine already loaded.
StatusOr<PlanResponse> PlanLoaded(job::Job job, hw::Machine machine, const job::Fixed& fixed,
                                  const std::vector<std::string>& exports);

}  // namespace dplace::run
