#include <cmath>
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/io/plan_export.h"
#include "dplace/report/chrome_trace.h"
#include "dplace/report/table.h"
#include "dplace/sim/evaluator.h"

namespace dplace::cli {
namespace {

Status RunPipeline(const SimulateFlags& flags, const sim::Problem& problem,
                   const sim::Placement& placement) {
  if (flags.pipeline != "auto" && !sched::ScheduleNamed(flags.pipeline)) {
    return InvalidInput("--pipeline: '" + flags.pipeline + "' is not auto or a schedule (" +
                        sched::ScheduleNames() + ")");
  }
  DPLACE_ASSIGN_OR_RETURN(
      sim::PipelineResult r,
      sim::SimulateNamedSchedule(problem, placement, flags.pipeline, flags.microbatches));
  if (!flags.trace.empty()) {
    DPLACE_RETURN_IF_ERROR(
        WriteFileAtomically(flags.trace, report::PipelineTrace(problem, r).dump() + "\n"));
  }
  if (flags.json) {
    PrintJson(io::PipelineResultJson(problem, r));
    return OkStatus();
  }
  std::cout << sched::ScheduleName(r.schedule) << ", " << r.microbatches
            << " micro-batches: " << r.makespan_s << " in all, " << r.time_per_microbatch_s
            << " per micro-batch, bubble " << 100 * r.bubble_fraction << "%\n";
  for (const sim::PipelineStage& st : r.stages) {
    std::cout << "  " << problem.c().device(st.device).name << ": forward " << st.forward_s
              << ", backward " << st.backward_s
              << (st.weight_s > 0 && sim::RowOf(r.schedule).splits_backward
                      ? " (weight gradients " + std::to_string(st.weight_s) + ")"
                      : std::string())
              << ", busy " << st.busy_s << ", in flight " << st.peak_in_flight << " x "
              << FormatBytes(st.recompute == sim::Recompute::kFull ? st.held_when_recomputing_bytes
                             : st.recompute == sim::Recompute::kSelective
                                 ? st.held_selective_bytes
                                 : st.held_per_microbatch_bytes)
              << (st.recomputes
                      ? " (recomputing: " + std::string(sim::RecomputeName(st.recompute)) + ")"
                      : std::string())
              << ", peak memory " << FormatBytes(st.peak_memory_bytes)
              << (st.replicas > 1 ? ", " + std::to_string(st.replicas) + " replicas (all-reduce " +
                                        FormatSeconds(st.allreduce_s) + ")"
                                  : std::string())
              << "\n";
  }
  if (!r.feasible) std::cout << "infeasible: " << r.reason << "\n";
  if (!flags.trace.empty()) std::cout << "trace written to " << flags.trace << "\n";
  return OkStatus();
}

}  // namespace

Status RunSimulate(const SimulateFlags& flags) {
  if (flags.plan.empty()) return InvalidInput("simulate needs --plan FILE");
  if (flags.microbatches < 1 || flags.microbatches > 100000) {
    return InvalidInput("--microbatches: must be between 1 and 100000");
  }
  DPLACE_ASSIGN_OR_RETURN(const auto robust, RobustFromFlags(flags.robust));
  DPLACE_RETURN_IF_ERROR(CheckOutputs(
      {{"--trace", flags.trace}}, {flags.problem.graph.path, flags.problem.cluster, flags.plan}));
  DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, ProblemFromFlags(flags.problem));
  if (!flags.step_model.empty()) {
    if (!flags.pipeline.empty() || lp.problem->objective != sim::Objective::kStep) {
      return InvalidInput("--step-model: applies to the step simulation (--objective step)");
    }
    auto spec = sim::ParseVariantSpec(flags.step_model);
    if (!spec.ok()) return spec.status().WithContext("--step-model");
    DPLACE_ASSIGN_OR_RETURN(sim::Problem variant, sim::MakeVariant(*lp.problem, *spec));
    lp.problem = std::make_shared<const sim::Problem>(std::move(variant));
  }
  const sim::Problem& problem = *lp.problem;
  DPLACE_ASSIGN_OR_RETURN(sim::Placement placement,
                          io::LoadPlan(flags.plan, problem.g(), problem.c()));
  if (!flags.pipeline.empty()) return RunPipeline(flags, problem, placement);
  run::PlacerResult result{"plan", placement, sim::MakeEvaluator(lp.problem)->Evaluate(placement)};
  if (robust.first.count > 0) {
    DPLACE_ASSIGN_OR_RETURN(auto judge, sim::MakeRobustEvaluator(lp.problem, robust.first));
    result.robust = judge->Judge(placement);
  }
  if (!flags.trace.empty()) {
    DPLACE_RETURN_IF_ERROR(WriteFileAtomically(flags.trace, TraceFileContent(problem, placement)));
  }
  if (flags.json) {
    PrintJson(report::ResultsJson(problem, {result}, 0));
    return OkStatus();
  }
  const sim::Evaluation& e = result.evaluation;
  std::cout << sim::ValueName(problem.objective) << ": " << report::FormatValue(problem, e.value)
            << "\nlower bound: " << report::FormatValue(problem, problem.LowerBound()) << " (gap "
            << FormatPercent(report::Gap(e.value, problem.LowerBound()))
            << ")\nfeasible: " << (e.feasible ? "yes" : "no")
            << (e.feasible ? "" : " (" + e.reason + ")") << "\n"
            << report::DeviceTable(problem, e);
  if (result.robust) {
    const sim::RobustJudgement& j = *result.robust;
    std::cout << "on " << j.values.size() << " variants of the model: median "
              << report::FormatValue(problem, j.median) << ", worst "
              << report::FormatValue(problem, j.worst)
              << (j.feasible ? "" : "; infeasible on " + j.reason) << "\n";
  }
  if (!flags.trace.empty()) std::cout << "trace written to " << flags.trace << "\n";
  return OkStatus();
}

}  // namespace dplace::cli
