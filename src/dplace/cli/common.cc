#include "dplace/cli/common.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/base/units.h"
#include "dplace/io/paper_json.h"
#include "dplace/io/plan_export.h"
#include "dplace/io/plan_json.h"
#include "dplace/report/chrome_trace.h"
#include "dplace/sim/fit.h"
#include "dplace/sim/step_sim.h"

namespace dplace::cli {

namespace {

Status WithFlagNames(const Status& status) {
  std::string m = status.message();
  for (const char* field : {"shapes", "unit", "training", "dtype", "cluster", "objective"}) {
    // "fix it with shapes NAME=DIMS": the field named inside a sentence.
    const std::string with = std::string("with ") + field + " ";
    if (const size_t at = m.find(with); at != std::string::npos) m.insert(at + 5, "--");
    const std::string key = std::string(field) + ": ";
    for (size_t at = m.find(key); at != std::string::npos; at = m.find(key, at + 1)) {
      if (at == 0 || (at >= 2 && m.compare(at - 2, 2, ": ") == 0)) {
        m.insert(at, "--");
        break;
      }
    }
  }
  return Status(status.code(), m);
}

}  // namespace

StatusOr<std::pair<sim::RobustOptions, bool>> RobustFromFlags(const RobustFlags& flags) {
  if (flags.variants < 0 || flags.variants > 64) {
    return InvalidInput("--robust: must be between 0 and 64 variants, got " +
                        std::to_string(flags.variants));
  }
  if (!(flags.spread >= 0 && flags.spread <= 2)) {
    return InvalidInput("--robust-spread: must be between 0 and 2");
  }
  sim::RobustOptions options{.count = flags.variants, .seed = flags.seed, .spread = flags.spread};
  if (flags.objective.empty()) return std::make_pair(options, false);
  if (flags.objective == "worst") {
    options.quantile = 1;
  } else if (flags.objective == "median") {
    options.quantile = 0.5;
  } else {
    const std::string& o = flags.objective;
    char* end = nullptr;
    const double q = o.size() > 1 && o[0] == 'q' ? std::strtod(o.c_str() + 1, &end) : 0;
    if (end == nullptr || *end != '\0' || !(q > 0 && q <= 1)) {
      return InvalidInput("--robust-objective: '" + o +
                          "' is not worst, median or qQ with 0 < Q <= 1 (e.g. q0.9)");
    }
    options.quantile = q;
  }
  if (flags.variants == 0) {
    return InvalidInput("--robust-objective: needs --robust K, the number of variants");
  }
  return std::make_pair(options, true);
}

StatusOr<io::LoadedGraph> GraphFromFlags(const GraphFlags& flags) {
  auto loaded = run::LoadGraphFile(flags);
  if (!loaded.ok()) return WithFlagNames(loaded.status());
  return loaded;
}

StatusOr<LoadedProblem> ProblemFromFlags(const ProblemFlags& flags) {
  auto loaded = run::LoadProblem(flags);
  if (!loaded.ok()) return WithFlagNames(loaded.status());
  return loaded;
}

std::string PlanFileContent(const std::string& format, const sim::Problem& problem,
                            const run::PlacerResult& result) {
  Json j;
  if (format == "paper-split") {
    j = io::WritePaperSplit(problem.g(), problem.c(), result.placement, result.evaluation);
  } else {
    j = io::WritePlan(problem.g(), problem.c(), result.placement, result.evaluation,
                      {.placer = result.placer,
                       .search_time_s = result.search_time_s,
                       .options = result.options});
  }
  return j.dump(2) + "\n";
}

std::string TraceFileContent(const sim::Problem& problem, const sim::Placement& placement) {
  sim::StepResult step = sim::SimulateStep(problem, placement, {.record_timeline = true});
  return report::ChromeTrace(problem, step.timeline).dump() + "\n";
}

Status CheckOutputs(const std::vector<std::pair<std::string, std::string>>& outputs) {
  std::vector<std::pair<std::string, std::string>> seen;  // (canonical path, flag)
  for (const auto& [flag, path] : outputs) {
    if (path.empty()) continue;
    DPLACE_RETURN_IF_ERROR(CheckWritable(flag, path));
    std::error_code ec;
    const std::string canonical = std::filesystem::weakly_canonical(path, ec).string();
    for (const auto& [other, other_flag] : seen) {
      if (other == canonical) {
        return InvalidInput(flag + ": " + path + " is also the file of " + other_flag +
                            ": one would overwrite the other");
      }
    }
    seen.emplace_back(canonical, flag);
  }
  return OkStatus();
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

void PrintJson(const Json& j) { std::cout << j.dump(2) << std::endl; }

}  // namespace dplace::cli
