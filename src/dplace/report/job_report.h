// A job plan (run/plan_job.h) for people and programs: the table `dplace plan` prints and the JSON
// object of `plan --json` and dplace.plan (docs/planning.md, "Reading the table").
#pragma once

#include <string>

#include "dplace/base/json_node.h"
#include "dplace/run/plan_graph.h"
#include "dplace/run/plan_job.h"

namespace dplace::report {

// One judged plan: config, predicted, memory_per_rank, fits, family.
Json JudgedPlanJson(const run::PlanResponse& r, const job::JudgedPlan& j);

// The whole answer: model, machine, best, alternatives (the best of each family), why, exports
// (framework, file, refusal), the FLOP convention, what the search visited.
Json PlanJson(const run::PlanResponse& r);

// The table: one row per family's best, the winner first, then the winner's memory per stage and
// why it won.
std::string PlanTable(const run::PlanResponse& r);

// Piper's DP on Piper's input: its time per sample and stages.
Json PiperJson(const run::PiperResponse& r);
std::string PiperTable(const run::PiperResponse& r);

// A graph's plan (run/plan_graph.h): best and alternatives, each family, gpus, predicted
// (seconds_per_iteration, samples_per_s, mfu, hfu), memory_per_rank, fits.
Json GraphPlanJson(const run::GraphPlanResponse& r);
std::string GraphPlanTable(const run::GraphPlanResponse& r);

}  // namespace dplace::report
