// The job planner's search: Piper's DP over contiguous stages x recomputation inside an
// enumeration of (TP, CP, PP, DP, micro-batch, schedule, virtual stages, ZeRO, SP), each candidate
// judged by the schedule's simulation (job/schedule.h) with its collectives (job/costs.h).
//
// Exact in its space: for each configuration the DP keeps, per (stage, layers so far), every
// split that is Pareto-optimal in (slowest stage, sum of stages, the most a stage does after the
// pipeline) and fits memory, so any time monotone in them is minimised by one of them; each of
// those is simulated and the fastest kept. The zero-bubble schedules' step is not (a rank's
// deferred weight gradients end it): a second pass judges, by branch and bound, every split of
// theirs whose lower bound is below the best plan of all families, within a budget
// (SearchResult::unproved). A recomputation mode no faster in any task than another that fits is
// never an option: with the ranks' orders fixed, no task ends earlier for it.
// Configurations are visited in order of a lower bound (the micro-batches' work spread evenly over
// the pipeline ranks) and skipped once it cannot beat the best of their family. Interleaved plans
// take an even split (Megatron-LM's) and the cheapest recomputation that fits each rank.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/hw/machine.h"
#include "dplace/job/costs.h"
#include "dplace/job/plan.h"

namespace dplace::job {

// What the user fixed (--fix); the search chooses the rest.
struct Fixed {
  std::optional<int> tp, pp, dp, cp, zero, micro_batch, virtual_stages;
  std::optional<bool> sequence_parallel;
  std::optional<Schedule> schedule;
  std::optional<Recompute> recompute;  // every stage's
  // A framework's limits (io/job_export.h): every stage as many layers; configurations it runs.
  bool even_stages = false;
  std::function<bool(const Config&)> allow;
};

enum class Family { kDataParallel, kFsdp, kTensor, kPipeline, kThreeD };
struct FamilyRow {
  Family family;
  std::string_view name;
  std::string_view what;
};
inline constexpr FamilyRow kFamilies[] = {
    {Family::kDataParallel, "data-parallel", "data parallelism only (ZeRO 0-2)"},
    {Family::kFsdp, "fsdp", "data parallelism with full sharding (ZeRO-3, FSDP)"},
    {Family::kTensor, "tensor", "tensor parallelism (with data parallelism), no pipeline"},
    {Family::kPipeline, "pipeline", "pipeline parallelism (with data parallelism), no TP"},
    {Family::kThreeD, "3d", "tensor x pipeline x data parallelism"},
};
Family FamilyOf(const Config& c);
std::string_view FamilyName(Family f);

// Where a plan's iteration goes, on its slowest rank (seconds): GEMM and kernel work, the
// pipeline's bubble, TP's exposed collectives, recomputation, the exposed part of the data-parallel
// reduction and ZeRO's gathers, the optimizer step.
struct Breakdown {
  double compute_s = 0, bubble_s = 0, tp_s = 0, recompute_s = 0, data_parallel_s = 0,
         optimizer_s = 0;
};

struct JudgedPlan {
  ParallelPlan plan;
  Family family = Family::kDataParallel;
  double iteration_s = 0;
  double tokens_per_s = 0;
  double mfu = 0, hfu = 0;          // model / hardware FLOPs over the GPUs' BF16 peak
  double model_tflops_per_gpu = 0;  // model FLOPs per GPU and second, in TFLOP/s
  std::vector<Memory> memory;       // per pipeline rank
  bool fits = false;
  Breakdown parts;
  double peak_memory() const;
};

// Everything of a plan but its stages, and a configuration with its stages.
Config ConfigOf(const ParallelPlan& plan);
ParallelPlan PlanOf(const Config& c, std::vector<StagePlan> stages);

// Judges one plan fully given (its stages cover the layers in order).
JudgedPlan Judge(const Job& job, const hw::Machine& m, const ParallelPlan& plan);

// The stage layouts a configuration allows: itself, or with `mixed_tp` every (t, d) with
// t x d = tp x dp, t dividing the heads (inside a node unless job.tp_across_nodes), d the
// micro-batch's micro_batch x dp sequences, SP where t > 1 (ZeRO over a stage's group of one
// shards nothing); least TP first.
std::vector<Config> StageVariants(const Job& job, const hw::Machine& m, const Config& c);

// Every configuration of the space `fixed` leaves open, valid on the machine (degrees dividing
// what they must, TP inside a node unless job.tp_across_nodes).
std::vector<Config> EnumerateConfigs(const Job& job, const hw::Machine& m, const Fixed& fixed);

struct SearchResult {
  std::optional<JudgedPlan> best;       // the fastest plan that fits
  std::vector<JudgedPlan> family_best;  // per family (in kFamilies order) that has a fitting plan
  std::optional<JudgedPlan> least_memory;  // when nothing fits: the plan needing least per GPU
  int64_t configurations = 0, judged = 0;
  // Zero-bubble configurations whose splits past the DP's front were searched only up to a
  // budget: their best is not proved (the DP's dimensions do not decide those schedules' step).
  int64_t unproved = 0;
};

SearchResult Search(const Job& job, const hw::Machine& m, const Fixed& fixed);

}  // namespace dplace::job
