// A job plan (job/plan.h) as the settings users paste into their framework: Megatron-LM's command
// line, torchtitan's TOML, DeepSpeed's JSON config. One row a framework: what it cannot run (a
// reason, for the planner to find the best plan it can) and its writer. The names of every flag
// and key come from the frameworks' own sources (docs/planning.md, "Exports").
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "dplace/job/plan.h"
#include "dplace/job/search.h"

namespace dplace::io {

struct JobExportRow {
  std::string_view name;  // megatron, torchtitan, deepspeed
  std::string_view what;
  // Why the framework cannot run the configuration `c` (checked before stages are chosen; empty:
  // it can), and why it cannot run the plan's stages (uneven splits, recomputation per stage).
  std::string (*config_refused)(const job::Job& job, const job::Config& c);
  std::string (*stages_refused)(const job::ParallelPlan& plan);
  // Whether it needs every stage to hold as many layers (the search then splits evenly).
  bool even_stages;
  // The file's content for a plan it runs; `header` (lines) goes in a comment where the format
  // has comments.
  std::string (*write)(const job::Job& job, const job::ParallelPlan& plan,
                       const std::string& header);
};

std::span<const JobExportRow> JobExportTable();
const JobExportRow* FindJobExport(std::string_view name);

// Why `row`'s framework cannot run `plan` (its configuration, then its stages); empty: it can.
std::string JobExportRefusal(const JobExportRow& row, const job::Job& job,
                             const job::ParallelPlan& plan);

// Megatron-LM's pipeline layout of a plan's virtual stages ("Et*4|t*4|t*4|t*4L": E the embedding,
// t a transformer layer, L the head and loss, stages split by '|').
std::string MegatronLayout(const job::ParallelPlan& plan);

}  // namespace dplace::io
