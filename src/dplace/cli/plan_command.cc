// `dplace plan`: the training job's plan (run/plan_job.h), its table or JSON, the frameworks'
// settings written as one set of outputs.
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/cli/common.h"
#include "dplace/io/job_export.h"
#include "dplace/io/load.h"
#include "dplace/report/job_report.h"

namespace dplace::cli {
namespace {

// An answer as `--json` or as its table.
template <typename Response>
void Print(bool json, const Response& r, Json (*as_json)(const Response&),
           std::string (*as_table)(const Response&)) {
  if (json) {
    PrintJson(as_json(r));
  } else {
    std::cout << as_table(r);
  }
}

Status RunPiper(const PlanFlags& flags) {
  run::PiperRequest request{.path = flags.model, .devices = flags.gpus};
  if (!flags.gpu_memory.empty()) {
    auto bytes = ParseBytes(flags.gpu_memory);
    if (!bytes.ok() || *bytes <= 0) {
      return InvalidInput("--gpu-memory: '" + flags.gpu_memory + "' is not a size");
    }
    request.memory_bytes = *bytes;
  }
  if (!flags.bandwidth.empty()) {
    auto rate = ParseBytesPerSecond(flags.bandwidth);
    if (!rate.ok() || *rate <= 0) {
      return InvalidInput("--bandwidth: '" + flags.bandwidth + "' is not a rate");
    }
    request.bandwidth_bytes_per_s = *rate;
  }
  if (!flags.exports.empty()) {
    return InvalidInput("--export: Piper's inputs have no framework settings");
  }
  DPLACE_ASSIGN_OR_RETURN(run::PiperResponse r, run::PlanPiperFile(request));
  Print(flags.json, r, report::PiperJson, report::PiperTable);
  return OkStatus();
}

// A graph file: its families on the machine's GPUs (run/plan_graph.h). The config's flags do not
// apply to it.
Status RunGraph(const PlanFlags& flags) {
  struct ConfigFlag {
    bool given;
    const char* flag;
    const char* of;  // what it applies to
  };
  for (const ConfigFlag& f : {ConfigFlag{flags.seq_len != 0, "--seq-len", "a config.json"},
                              {!flags.fix.empty(), "--fix", "a config.json"},
                              {flags.dtype != "bf16", "--dtype", "a config.json"},
                              {flags.tp_across_nodes, "--tp-across-nodes", "a config.json"},
                              {flags.no_flash_attention, "--no-flash-attention", "a config.json"},
                              {!flags.exports.empty(), "--export", "a config.json"},
                              {flags.gpus != 0, "--gpus", "Piper's input"},
                              {!flags.gpu_memory.empty(), "--gpu-memory", "Piper's input"},
                              {!flags.bandwidth.empty(), "--bandwidth", "Piper's input"}}) {
    if (f.given) {
      return InvalidInput(
          std::string(f.flag) + ": applies to " + f.of + ", not to " + flags.model +
          ", a graph (its plans: data parallelism, FSDP, a pipeline, an op-level "
          "placement; `place --export` writes a pipeline's or a placement's files)");
    }
  }
  if (flags.cluster.empty()) return InvalidInput("--cluster: required for a graph");
  if (flags.global_batch == 0) return InvalidInput("--global-batch: required for a graph");
  run::GraphPlanRequest request{.model = flags.model,
                                .cluster = flags.cluster,
                                .global_batch = flags.global_batch,
                                .seed = flags.seed,
                                .shapes = flags.shapes};
  if (flags.time_limit_s != 0) request.time_limit_s = flags.time_limit_s;
  auto planned = run::PlanGraph(request);
  if (!planned.ok()) return WithFlagNames(planned.status());  // "shapes" is --shapes here
  const run::GraphPlanResponse& r = *planned;
  Print(flags.json, r, report::GraphPlanJson, report::GraphPlanTable);
  return OkStatus();
}

}  // namespace

Status RunPlan(const PlanFlags& flags) {
  switch (run::KindOfModel(flags.model)) {
    case run::ModelKind::kPiper:
      return RunPiper(flags);
    case run::ModelKind::kGraph:
      return RunGraph(flags);
    case run::ModelKind::kConfig:
      break;
  }
  const bool config = io::IsModelConfigFile(flags.model);  // else PlanJob says what it is not
  if (config && flags.time_limit_s != 0)
    return InvalidInput("--time-limit: applies to a graph, not to a config.json");
  if (config && !flags.shapes.empty())
    return InvalidInput("--shapes: applies to an ONNX graph, not to a config.json");
  if (flags.cluster.empty()) return InvalidInput("--cluster: required for a config.json");
  std::vector<std::pair<std::string, std::string>> exports;  // framework, file
  std::vector<Output> outputs;
  for (const std::string& spec : flags.exports) {
    const size_t eq = spec.find('=');
    const std::string name = spec.substr(0, eq);
    if (eq == std::string::npos || eq + 1 == spec.size() || !io::FindJobExport(name)) {
      std::string names;
      for (const io::JobExportRow& row : io::JobExportTable()) {
        names += std::string(names.empty() ? "" : ", ") + std::string(row.name) + "=FILE";
      }
      return InvalidInput("--export: '" + spec + "' is not " + names);
    }
    exports.emplace_back(name, spec.substr(eq + 1));
    outputs.push_back({"--export " + name, spec.substr(eq + 1)});
  }
  DPLACE_RETURN_IF_ERROR(CheckOutputs(outputs, {flags.model, flags.cluster}));
  run::PlanRequest request{.model = flags.model,
                           .cluster = flags.cluster,
                           .global_batch = flags.global_batch,
                           .seq_len = flags.seq_len,
                           .dtype = flags.dtype,
                           .fix = flags.fix,
                           .tp_across_nodes = flags.tp_across_nodes,
                           .flash_attention = !flags.no_flash_attention};
  for (const auto& [name, file] : exports) request.exports.push_back(name);
  DPLACE_ASSIGN_OR_RETURN(run::PlanResponse r, run::PlanJob(request));
  OutputSet files;
  for (size_t i = 0; i < exports.size(); ++i) {
    const run::FrameworkPlan& f = r.exports[i];
    if (!f.plan) {
      return InvalidInput("--export " + f.framework + ": " + f.refusal +
                          ", and no plan it runs fits");
    }
    DPLACE_RETURN_IF_ERROR(files.Add(exports[i].second, f.content));
  }
  DPLACE_RETURN_IF_ERROR(files.Commit());
  if (flags.json) {
    PrintJson(report::PlanJson(r));
    return OkStatus();
  }
  std::cout << report::PlanTable(r);
  for (size_t i = 0; i < exports.size(); ++i) {
    std::cout << exports[i].first << " settings written to " << exports[i].second << "\n";
  }
  return OkStatus();
}

}  // namespace dplace::cli
