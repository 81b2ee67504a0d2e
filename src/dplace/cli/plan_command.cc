// `dplace plan`: the training job's plan (run/plan_job.h), its table or JSON, the frameworks'
// settings written as one set of outputs.
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/io/job_export.h"
#include "dplace/report/job_report.h"

namespace dplace::cli {
namespace {

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
  if (flags.json) {
    PrintJson(report::PiperJson(r));
  } else {
    std::cout << report::PiperTable(r);
  }
  return OkStatus();
}

}  // namespace

Status RunPlan(const PlanFlags& flags) {
  if (run::IsPiperFile(flags.model)) return RunPiper(flags);
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
