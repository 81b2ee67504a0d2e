#include <iostream>

#include "dplace/cli/commands.h"
#include "dplace/report/table.h"
#include "dplace/sim/evaluator.h"

namespace dplace::cli {

Status RunSimulate(const SimulateFlags& flags) {
  if (flags.plan.empty()) return InvalidInput("simulate needs --plan FILE");
  DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, LoadProblem(flags.problem));
  const sim::Problem& problem = *lp.problem;
  DPLACE_ASSIGN_OR_RETURN(sim::Placement placement,
                          io::LoadPlan(flags.plan, problem.g(), problem.c()));
  sim::SimulatedEvaluator evaluator(problem);
  const report::PlacerResult result{"plan", placement, evaluator.Evaluate(placement), 0};
  if (!flags.trace.empty()) {
    DPLACE_RETURN_IF_ERROR(WriteTraceFile(flags.trace, problem, placement));
  }
  if (flags.json) {
    PrintJson(report::ResultJson(problem, result));
    return OkStatus();
  }
  const sim::Evaluation& e = result.evaluation;
  std::cout << (problem.objective == sim::Objective::kStep ? "step time: " : "max-load: ")
            << e.value << "\nlower bound: " << e.lower_bound << " (gap " << 100 * report::Gap(e)
            << "%)\nfeasible: " << (e.feasible ? "yes" : "no")
            << (e.feasible ? "" : " (" + e.reason + ")") << "\n"
            << report::DeviceTable(problem, e);
  if (!flags.trace.empty()) std::cout << "trace written to " << flags.trace << "\n";
  return OkStatus();
}

}  // namespace dplace::cli
