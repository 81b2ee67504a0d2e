#include "dplace/cli/common.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/base/units.h"
#include "dplace/graph/precision.h"
#include "dplace/graph/training.h"
#include "dplace/io/paper_json.h"
#include "dplace/io/plan_export.h"
#include "dplace/io/plan_json.h"
#include "dplace/place/coarsen.h"
#include "dplace/place/registry.h"
#include "dplace/report/chrome_trace.h"
#include "dplace/sim/fit.h"
#include "dplace/sim/step_sim.h"

namespace dplace::cli {

StatusOr<io::InputShapes> ParseShapes(const std::vector<std::string>& specs) {
  io::InputShapes shapes;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0) {
      return InvalidInput("--shapes: '" + spec + "' is not NAME=DIMS (e.g. tokens=8x512)");
    }
    std::vector<int64_t>& dims = shapes[spec.substr(0, eq)];
    const std::string text = spec.substr(eq + 1);
    for (size_t at = 0; at <= text.size();) {
      const size_t x = std::min(text.find('x', at), text.size());
      const std::string d = text.substr(at, x - at);
      char* end = nullptr;
      const long long v = d.empty() ? 0 : std::strtoll(d.c_str(), &end, 10);
      if (d.empty() || *end != '\0' || v < 1 || v > (1LL << 40)) {
        return InvalidInput("--shapes: '" + spec +
                            "': each dimension must be an integer from 1 "
                            "to 2^40, dimensions joined by 'x'");
      }
      dims.push_back(v);
      at = x + 1;
    }
  }
  return shapes;
}

StatusOr<io::LoadedGraph> LoadGraphFile(const GraphFlags& flags) {
  DPLACE_ASSIGN_OR_RETURN(io::InputShapes shapes, ParseShapes(flags.shapes));
  if (!shapes.empty() && !flags.path.ends_with(".onnx")) {
    return InvalidInput(flags.path + ": --shapes applies to ONNX models only");
  }
  DPLACE_ASSIGN_OR_RETURN(io::LoadedGraph loaded, io::LoadGraph(flags.path, shapes));
  for (const std::string& w : loaded.warnings) {
    std::cerr << "warning: " << flags.path << ": " << w << "\n";
  }
  if (!flags.unit.empty() && flags.unit != "op") {
    int depth = 1;
    if (flags.unit != "module") {
      const std::string prefix = "module:";
      char* end = nullptr;
      const long v = flags.unit.starts_with(prefix)
                         ? std::strtol(flags.unit.c_str() + prefix.size(), &end, 10)
                         : 0;
      if (end == nullptr || *end != '\0' || v < 1 || v > 64) {
        return InvalidInput("--unit: '" + flags.unit +
                            "' is not op, module or module:DEPTH "
                            "(DEPTH from 1 to 64)");
      }
      depth = static_cast<int>(v);
    }
    auto grouped = io::GroupByModule(*loaded.graph, depth);
    if (!grouped.ok()) return grouped.status().WithContext("--unit").WithContext(flags.path);
    loaded.graph = std::make_shared<const graph::Graph>(std::move(grouped).value());
  }
  if (flags.training) {
    auto expanded = graph::ExpandTraining(*loaded.graph, {.colocate = !flags.free_gradients});
    if (!expanded.ok()) return expanded.status().WithContext("--training").WithContext(flags.path);
    loaded.graph = std::make_shared<const graph::Graph>(std::move(expanded).value());
  }
  if (!flags.dtype.empty()) {
    const auto precision = graph::ParsePrecision(flags.dtype);
    if (!precision) {
      return InvalidInput("--dtype: '" + flags.dtype + "' is not fp32, fp16, bf16 or amp");
    }
    if (*precision != loaded.precision) {
      loaded.graph = std::make_shared<const graph::Graph>(
          graph::ApplyPrecision(*loaded.graph, loaded.precision, *precision));
      loaded.precision = *precision;
    }
  }
  return loaded;
}

StatusOr<LoadedProblem> LoadProblem(const ProblemFlags& flags) {
  LoadedProblem out;
  DPLACE_ASSIGN_OR_RETURN(out.loaded, LoadGraphFile(flags.graph));
  std::shared_ptr<const hw::Cluster> cluster = out.loaded.cluster;
  if (!flags.cluster.empty()) {
    DPLACE_ASSIGN_OR_RETURN(cluster, io::LoadCluster(flags.cluster));
  }
  if (cluster == nullptr) {
    return InvalidInput(flags.graph.path + ": this graph format does not describe a machine; " +
                        "pass --cluster (a preset such as k80x4, or a dplace-cluster/1 file)");
  }
  if (graph::UsesHalfPeak(out.loaded.precision)) {
    cluster = std::make_shared<const hw::Cluster>(cluster->AtHalfPrecision());
  }
  sim::Objective objective = out.loaded.format == io::GraphFormat::kPaper
                                 ? sim::Objective::kThroughput
                                 : sim::Objective::kStep;
  if (!flags.objective.empty()) {
    auto parsed = sim::ParseObjective(flags.objective);
    if (!parsed) {
      return InvalidInput("--objective: '" + flags.objective +
                          "' is not step, throughput or latency");
    }
    objective = *parsed;
  }
  // A file that defines its own machine is an instance: an op that machine cannot run makes it
  // infeasible (a result). A graph paired with a cluster that cannot run it is a usage error.
  const sim::MissingDevice missing =
      flags.cluster.empty() ? sim::MissingDevice::kInfeasible : sim::MissingDevice::kBadInput;
  auto problem =
      sim::MakeProblem(out.loaded.graph, cluster, objective, cost::RooflineCostModel(), missing);
  if (!problem.ok()) return problem.status().WithContext(flags.graph.path);
  out.problem = std::make_unique<sim::Problem>(std::move(problem).value());
  return out;
}

std::string PlanFileContent(const std::string& format, const sim::Problem& problem,
                            const report::PlacerResult& result) {
  Json j;
  if (format == "paper-split") {
    j = io::WritePaperSplit(problem.g(), problem.c(), result.placement, result.evaluation);
  } else {
    j = io::WritePlan(problem.g(), problem.c(), result.placement, result.evaluation,
                      {.placer = result.placer, .search_time_s = result.search_time_s});
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
    for (size_t op = 0; op < chosen->size(); ++op) {
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

StatusOr<report::PlacerResult> RunPlacer(const std::string& name, const sim::Problem& problem,
                                         const RunOptions& options) {
  DPLACE_ASSIGN_OR_RETURN(auto placer, place::MakePlacer(name));
  sim::SimulatedEvaluator evaluator(problem);
  place::PlaceContext ctx{
      .evaluator = &evaluator,
      .seed = options.seed,
      .budget = {.max_evaluations = options.evaluations, .time_limit_s = options.time_limit_s},
      .given_plan = options.given_plan,
      .portfolio = options.portfolio};
  // The exact placers of the paper's model prove optimality and bounds: only on the graph itself.
  bool exact = false;
  for (const place::PlacerEntry& e : place::Placers())
    exact |= e.name == name && e.paper_model_only;
  const auto start = std::chrono::steady_clock::now();
  auto placement =
      options.coarsen_ops > 0 && !exact
          ? place::PlaceCoarsened(*placer, problem, ctx,
                                  {.target_ops = options.coarsen_ops, .refine = options.refine})
          : placer->Place(problem, ctx);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!placement.ok()) return placement.status().WithContext("placer " + name);
  sim::SimulatedEvaluator judge(problem);
  sim::Evaluation e = judge.Evaluate(*placement);
  e.lower_bound = std::max(e.lower_bound, ctx.lower_bound);  // e.g. an integer program's bound
  return report::PlacerResult{name, *placement, std::move(e), seconds, ctx.note};
}

void ShareBestLowerBound(std::vector<report::PlacerResult>* results) {
  double best = 0;
  for (const auto& r : *results) best = std::max(best, r.evaluation.lower_bound);
  for (auto& r : *results) r.evaluation.lower_bound = best;
}

void PrintJson(const Json& j) { std::cout << j.dump(2) << std::endl; }

}  // namespace dplace::cli
