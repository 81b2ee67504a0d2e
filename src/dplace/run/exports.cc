#include "dplace/run/exports.h"

#include <algorithm>

#include "dplace/base/spelling.h"
#include "dplace/base/units.h"
#include "dplace/io/plan_export.h"
#include "dplace/place/search/score.h"
#include "dplace/sim/objectives.h"

namespace dplace::run {
namespace {

// A device map (accelerate) is judged under the eager runtime on whole modules (--unit
// module:64: every module with no module inside it one unit, unless a unit is given), objective
// step.
Status PrepareDeviceMap(ProblemSpec* spec) {
  if (!spec->objective.empty() && spec->objective != "step") {
    return InvalidInput("export: a device map is judged by its step (objective step), not " +
                        spec->objective);
  }
  if (spec->runtime == "executor") {
    return InvalidInput(
        "export: a device map runs under eager PyTorch (runtime eager), not a graph executor");
  }
  spec->objective = "step";
  spec->runtime = "eager";
  if (spec->graph.unit.empty()) spec->graph.unit = "module:64";
  return OkStatus();
}

StatusOr<ExportFile> WriteDeviceMap(const sim::Problem& problem, const sim::Placement& placement) {
  io::DeviceMap map = io::MakeDeviceMap(problem, placement);
  // Made from the graph alone: a name the graph does not show cannot be a key.
  map.split_modules.emplace_back(
      "the map's keys are the modules and parameters the graph reads; a parameter it does not "
      "show (a second name of a tied weight, a branch the export did not take, one folded into a "
      "constant) is in no key, and accelerate refuses a map that leaves one out: "
      "dplace.torch.device_map(model, plan, problem) adds them from the model");
  return ExportFile{.content = std::move(map.map), .notes = std::move(map.split_modules)};
}

// Stages are judged by the pipeline schedule unless an objective is given, over blocks unless a
// unit is given.
Status PrepareStages(ProblemSpec* spec) {
  if (spec->objective.empty()) spec->objective = "pipeline";
  spec->graph.pipeline = true;
  return OkStatus();
}

StatusOr<ExportFile> WriteStages(const sim::Problem& problem, const sim::Placement& placement) {
  DPLACE_ASSIGN_OR_RETURN(Json stages, io::StagesJson(problem, placement));
  return ExportFile{.content = std::move(stages)};
}

constexpr ExportRow kTable[] = {
    {.name = "device_map",
     .noun = "a device map",
     .judged_by = "eager PyTorch",
     .prepare = PrepareDeviceMap,
     .write = WriteDeviceMap},
    {.name = "stages",
     .noun = "pipeline stages",
     .judged_by = "a pipeline schedule",
     .prepare = PrepareStages,
     .write = WriteStages,
     .fallback_placer = "contiguous",
     .fallback_note = "is not a pipeline of contiguous stages; the stages are"},
};

}  // namespace

std::span<const ExportRow> ExportTable() { return kTable; }

StatusOr<const ExportRow*> FindExport(std::string_view name) {
  for (const ExportRow& row : kTable) {
    if (row.name == name) return &row;
  }
  std::vector<std::string_view> names;
  for (const auto& row : kTable) names.push_back(row.name);
  const std::string list = OneOf(names);
  return InvalidInput("export: '" + std::string(name) + "' is not " + list);
}

Status SpecForExports(const std::vector<std::string>& names, ProblemSpec* spec) {
  std::vector<const ExportRow*> rows;
  for (const std::string& name : names) {
    DPLACE_ASSIGN_OR_RETURN(const ExportRow* row, FindExport(name));
    if (std::find(rows.begin(), rows.end(), row) == rows.end()) rows.push_back(row);
  }
  // Each format's plan is judged as its file runs: two run differently, from two runs.
  for (const ExportRow* a : rows) {
    for (const ExportRow* b : rows) {
      if (a->judged_by == b->judged_by) continue;
      return InvalidInput("export: " + std::string(a->noun) + " and " + std::string(b->noun) +
                          " are judged under different runtimes (" + std::string(a->judged_by) +
                          ", " + std::string(b->judged_by) + "): write them from two runs");
    }
  }
  for (const ExportRow* row : rows) DPLACE_RETURN_IF_ERROR(row->prepare(spec));
  return OkStatus();
}

StatusOr<ExportFile> ExportOfResults(const ExportRow& row,
                                     const std::shared_ptr<const sim::Problem>& shared,
                                     const std::vector<PlacerResult>& results, int chosen,
                                     const RunRequest& request) {
  const sim::Problem& problem = *shared;
  const PlacerResult& plan = results[static_cast<size_t>(chosen)];
  auto file = row.write(problem, plan.placement);
  if (file.ok() || row.fallback_placer.empty()) return file;
  // The search is not thrown away for want of a plan the format can write.
  const PlacerResult* best = nullptr;
  ExportFile best_file;
  for (const PlacerResult& r : results) {
    auto f = row.write(problem, r.placement);
    if (f.ok() &&
        (best == nullptr || place::ScoreOf(r.evaluation) < place::ScoreOf(best->evaluation))) {
      best = &r;
      best_file = std::move(f).value();
    }
  }
  PlacerResult fallback;
  if (best == nullptr) {
    RunRequest again = request;
    again.placer = std::string(row.fallback_placer);
    DPLACE_ASSIGN_OR_RETURN(fallback, Run(shared, again));
    auto f = row.write(problem, fallback.placement);
    if (!f.ok()) return f.status().WithContext("export " + std::string(row.name));
    best_file = std::move(f).value();
    best = &fallback;
  }
  const std::string value = RowOf(problem.objective).takes_runtime
                                ? FormatSeconds(best->evaluation.value)
                                : std::to_string(best->evaluation.value);
  const std::string note = "the written plan (" + plan.placer + ") " +
                           std::string(row.fallback_note) + " " + best->placer + "'s (" + value +
                           ")";
  best_file.notes.push_back("--export " + std::string(row.name) + ": " + note);
  best_file.content["note"] = note;
  best_file.content["placer"] = best->placer;
  return best_file;
}

}  // namespace dplace::run
