#include "dplace/report/outputs.h"

#include "dplace/base/units.h"
#include "dplace/io/paper_json.h"
#include "dplace/io/plan_json.h"
#include "dplace/report/chrome_trace.h"
#include "dplace/sim/fit.h"
#include "dplace/sim/step_sim.h"

namespace dplace::report {

std::string PlanFileContent(const std::string& format, const sim::Problem& problem,
                            const run::PlacerResult& result, double lower_bound) {
  Json j;
  if (format == "paper-split") {
    j = io::WritePaperSplit(problem.g(), problem.c(), result.placement, result.evaluation);
  } else {
    j = io::WritePlan(problem.g(), problem.c(), result.placement, result.evaluation,
                      {.placer = result.placer,
                       .search_time_s = result.search_time_s,
                       .options = result.options,
                       .lower_bound = lower_bound});
  }
  return j.dump(2) + "\n";
}

std::string TraceFileContent(const sim::Problem& problem, const sim::Placement& placement) {
  sim::StepResult step = sim::SimulateStep(problem, placement, {.record_timeline = true});
  return report::ChromeTrace(problem, step.timeline).dump() + "\n";
}

std::vector<std::string> FitLines(const sim::Problem& problem, int64_t batch,
                                  const sim::Placement* chosen, double chosen_s) {
  std::vector<std::string> lines;
  const std::vector<sim::KindFit> fits = sim::FitOnOneDevice(problem, batch);
  for (const sim::KindFit& f : fits) {
    std::string line = "one " + f.kind + " (of " + std::to_string(f.count) + "): ";
    if (!f.runs) {
      lines.push_back(line + "cannot run every op");
      continue;
    }
    const sim::MemoryNeed& m = f.need;
    line += std::string(f.fits ? "fits" : "does not fit") + ", needs " + FormatBytes(m.Total()) +
            " of " + FormatBytes(f.capacity_bytes) + " (weights " + FormatBytes(m.weights_bytes) +
            ", gradients " + FormatBytes(m.gradients_bytes) + ", optimiser state " +
            FormatBytes(m.optimizer_bytes) + ", activations " + FormatBytes(m.activations_bytes) +
            "), step " + FormatSeconds(f.step_s);
    if (f.max_batch >= 0) line += "; largest batch that fits " + std::to_string(f.max_batch);
    lines.push_back(line);
  }
  const sim::KindFit* accelerator = nullptr;  // the first kind that is not a CPU
  for (const sim::KindFit& f : fits) {
    if (f.kind != "cpu" && accelerator == nullptr) accelerator = &f;
  }
  if (accelerator == nullptr) return lines;
  if (auto dp = sim::DataParallelStep(problem, *accelerator, batch)) {
    std::string line = "data parallel on " + std::to_string(dp->devices) + " " + accelerator->kind +
                       ": " + FormatSeconds(dp->step_s) + " step + " +
                       FormatSeconds(dp->allreduce_s) + " all-reduce per " +
                       std::to_string(dp->devices) + " x " + std::to_string(batch) +
                       " samples = " + FormatSeconds(dp->per_sample_s) + " per sample";
    if (chosen != nullptr) {
      line += "; the plan: " + FormatSeconds(chosen_s / static_cast<double>(batch)) + " per sample";
    }
    lines.push_back(line);
    // The strategy that wins, of the two this report knows: the op-level plan or data parallelism.
    if (chosen != nullptr && batch > 0 && dp->per_sample_s > 0) {
      const double plan_per_sample = chosen_s / static_cast<double>(batch);
      char ratio[32];
      if (dp->per_sample_s < plan_per_sample) {
        std::snprintf(ratio, sizeof ratio, "%.2f", plan_per_sample / dp->per_sample_s);
        lines.push_back("strategy that wins: data parallelism on " + std::to_string(dp->devices) +
                        " " + accelerator->kind + ", " + ratio +
                        "x faster a sample than the op-level plan (run the step whole on each "
                        "device, as DDP or FSDP; `dplace plan --model` on this graph weighs ZeRO, "
                        "FSDP and pipelines with replicas too, and on a transformer's config.json "
                        "tensor parallelism and recomputation)");
      } else {
        std::snprintf(ratio, sizeof ratio, "%.2f", dp->per_sample_s / plan_per_sample);
        lines.push_back(std::string("strategy that wins: the op-level plan, ") + ratio +
                        "x faster a sample than data parallelism");
      }
    }
  }
  if (chosen != nullptr && !accelerator->fits) {
    for (sim::OpId op : chosen->ids()) {
      if (problem.c().device((*chosen)[op]).kind != "cpu") continue;
      lines.push_back("the plan runs ops on " + problem.c().device((*chosen)[op]).name +
                      ": the step does not fit on one " + accelerator->kind + ": needs " +
                      FormatBytes(accelerator->need.Total()) + ", has " +
                      FormatBytes(accelerator->capacity_bytes));
      break;
    }
  }
  return lines;
}

}  // namespace dplace::report
