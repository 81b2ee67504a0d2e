#include "dplace/run/plan_job.h"

#include <chrono>
#include <cmath>
#include <map>

#include "dplace/base/json_node.h"
#include "dplace/base/spelling.h"
#include "dplace/base/units.h"
#include "dplace/io/job_export.h"
#include "dplace/io/load.h"
#include "dplace/io/profiles.h"

namespace dplace::run {
namespace {

const std::vector<std::string> kFixKeys = {"tp", "pp",  "dp", "cp",       "zero",
                                           "sp", "mbs", "vp", "schedule", "recompute"};

StatusOr<int> PositiveInt(std::string_view key, std::string_view value, int most) {
  int v = 0;
  size_t used = 0;
  for (const char ch : value) {
    if (ch < '0' || ch > '9' || v > most) break;
    v = v * 10 + (ch - '0');
    ++used;
  }
  if (value.empty() || used != value.size() || v < 1 || v > most) {
    return InvalidInput("--fix: " + std::string(key) + "=" + std::string(value) +
                        ": expected a whole number from 1 to " + std::to_string(most));
  }
  return v;
}

std::string Gib(double bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f GiB", bytes / (1024.0 * 1024 * 1024));
  return buf;
}

bool Divides(int64_t d, int64_t n) { return d > 0 && n % d == 0; }

// One line for the first way --fix contradicts the model or the machine.
Status CheckFixed(const job::Fixed& f, const job::Job& job, const hw::Machine& m) {
  const int n = m.num_gpus();
  const std::string gpus = std::to_string(n) + " GPUs of " + m.name;
  if (f.tp && (!Divides(*f.tp, job.model.heads) || !Divides(*f.tp, job.model.kv_heads))) {
    return InvalidInput("--fix: tp=" + std::to_string(*f.tp) + " does not divide the model's " +
                        std::to_string(job.model.heads) + " attention heads and " +
                        std::to_string(job.model.kv_heads) + " key-value heads");
  }
  if (f.tp && *f.tp > m.gpus_per_node() && !job.tp_across_nodes) {
    return InvalidInput("--fix: tp=" + std::to_string(*f.tp) + " spans nodes of " +
                        std::to_string(m.gpus_per_node()) +
                        " GPUs (a TP group stays inside one NVLink domain; "
                        "--tp-across-nodes allows it)");
  }
  if (f.pp && *f.pp > job.model.layers) {
    return InvalidInput("--fix: pp=" + std::to_string(*f.pp) + " is more stages than the model's " +
                        std::to_string(job.model.layers) + " layers");
  }
  int64_t product = 1;
  for (const auto& d : {f.tp, f.pp, f.dp, f.cp}) product *= d.value_or(1);
  if (f.tp && f.pp && f.dp && f.cp.value_or(1) && product != n) {
    return InvalidInput("--fix: tp x pp x dp x cp = " + std::to_string(product) + ", not the " +
                        gpus);
  }
  if (!Divides(product, n)) {
    return InvalidInput("--fix: the degrees given multiply to " + std::to_string(product) +
                        ", which does not divide the " + gpus);
  }
  if (f.cp && !Divides(2LL * *f.cp, job.seq_len) && *f.cp > 1) {
    return InvalidInput("--fix: cp=" + std::to_string(*f.cp) + ": --seq-len " +
                        std::to_string(job.seq_len) + " is not a multiple of 2 x cp");
  }
  if (f.micro_batch && !Divides(*f.micro_batch, job.global_batch)) {
    return InvalidInput("--fix: mbs=" + std::to_string(*f.micro_batch) +
                        " does not divide --global-batch " + std::to_string(job.global_batch));
  }
  if (f.dp && !Divides(static_cast<int64_t>(*f.dp) * f.micro_batch.value_or(1), job.global_batch)) {
    return InvalidInput("--fix: dp=" + std::to_string(*f.dp) +
                        " x mbs=" + std::to_string(f.micro_batch.value_or(1)) +
                        " does not divide --global-batch " + std::to_string(job.global_batch));
  }
  if (f.sequence_parallel == true && f.tp == 1) {
    return InvalidInput("--fix: sp=on needs tensor parallelism (tp > 1)");
  }
  if (f.virtual_stages && *f.virtual_stages > 1) {
    if (f.schedule && *f.schedule != job::Schedule::kInterleaved) {
      return InvalidInput("--fix: vp=" + std::to_string(*f.virtual_stages) +
                          " runs under schedule=interleaved, not " +
                          std::string(job::RowOf(*f.schedule).name));
    }
    if (f.pp && job.model.layers % (static_cast<int64_t>(*f.pp) * *f.virtual_stages) != 0) {
      return InvalidInput("--fix: vp=" + std::to_string(*f.virtual_stages) +
                          " with pp=" + std::to_string(*f.pp) + ": the model's " +
                          std::to_string(job.model.layers) + " layers do not split into " +
                          std::to_string(*f.pp * *f.virtual_stages) + " equal virtual stages");
    }
    if (f.pp == 1) return InvalidInput("--fix: vp > 1 needs a pipeline (pp > 1)");
  }
  if (f.schedule == job::Schedule::kInterleaved && f.virtual_stages == 1) {
    return InvalidInput("--fix: schedule=interleaved needs vp > 1");
  }
  if (f.zero && *f.zero > 0 && f.dp == 1 && f.cp.value_or(1) == 1) {
    return InvalidInput("--fix: zero=" + std::to_string(*f.zero) +
                        " shards over data-parallel ranks, and dp=1");
  }
  return OkStatus();
}

std::string PlanName(const job::ParallelPlan& p) {
  std::string s =
      "tp=" + std::to_string(p.tp) + " pp=" + std::to_string(p.pp) + " dp=" + std::to_string(p.dp);
  if (p.cp > 1) s += " cp=" + std::to_string(p.cp);
  if (p.zero > 0) s += " zero=" + std::to_string(p.zero);
  return s;
}

// Which term the runner-up loses on.
std::string WhyItWon(const job::JudgedPlan& best, const std::vector<job::JudgedPlan>& families) {
  const job::JudgedPlan* runner = nullptr;
  for (const job::JudgedPlan& j : families) {
    if (j.family == best.family) continue;
    if (!runner || j.iteration_s < runner->iteration_s) runner = &j;
  }
  if (!runner) return "no plan of another family fits";
  if (runner->iteration_s <= best.iteration_s * (1 + 1e-6)) {
    return "it ties with the best of " + std::string(job::FamilyName(runner->family)) + " (" +
           PlanName(runner->plan) + ", " + FormatBytes(runner->peak_memory()) + " a GPU against " +
           FormatBytes(best.peak_memory()) + "); of equal times the simpler family is listed first";
  }
  const job::Breakdown& a = best.parts;
  const job::Breakdown& b = runner->parts;
  const std::pair<const char*, double> terms[] = {
      {"compute", b.compute_s - a.compute_s},
      {"pipeline bubble", b.bubble_s - a.bubble_s},
      {"tensor-parallel communication", b.tp_s - a.tp_s},
      {"recomputation", b.recompute_s - a.recompute_s},
      {"exposed data-parallel reduction", b.data_parallel_s - a.data_parallel_s},
      {"optimizer step", b.optimizer_s - a.optimizer_s}};
  const auto* most = &terms[0];
  for (const auto& t : terms) {
    if (t.second > most->second) most = &t;
  }
  char buf[256];
  std::snprintf(buf, sizeof buf, "%.3g", runner->iteration_s / best.iteration_s);
  return "the runner-up, " + std::string(job::FamilyName(runner->family)) + " (" +
         PlanName(runner->plan) + "), is " + buf + "x slower: its " + most->first + " costs " +
         FormatSeconds(most->second) + " more a step on its slowest rank";
}

// The frameworks' settings: the best plan each runs, searched within its limits where it cannot
// run the overall best.
StatusOr<std::vector<FrameworkPlan>> Exports(const job::Job& job, const hw::Machine& m,
                                             const job::Fixed& fixed,
                                             const std::optional<job::JudgedPlan>& best,
                                             const std::vector<std::string>& names) {
  std::vector<FrameworkPlan> out;
  for (const std::string& name : names) {
    const io::JobExportRow* row = io::FindJobExport(name);
    DPLACE_CHECK(row != nullptr);
    FrameworkPlan fp{.framework = name};
    if (best) fp.refusal = io::JobExportRefusal(*row, job, best->plan);
    if (best && fp.refusal.empty()) {
      fp.plan = best;
    } else {
      // The best plan it runs: its configurations, every stage recomputing alike.
      job::Fixed limited = fixed;
      limited.even_stages = row->even_stages;
      limited.allow = [row, &job, &fixed](const job::Config& c) {
        return row->config_refused(job, c).empty() && (!fixed.allow || fixed.allow(c));
      };
      for (job::Recompute r :
           {job::Recompute::kNone, job::Recompute::kSelective, job::Recompute::kFull}) {
        if (fixed.recompute && *fixed.recompute != r) continue;
        limited.recompute = r;
        job::SearchResult found = job::Search(job, m, limited);
        if (!found.best || !io::JobExportRefusal(*row, job, found.best->plan).empty()) continue;
        if (!fp.plan || found.best->iteration_s < fp.plan->iteration_s) fp.plan = found.best;
      }
    }
    if (fp.plan) {
      std::string header = "dplace plan: " + job.model.name + " on " + m.name + ", global batch " +
                           std::to_string(job.global_batch) + " x " + std::to_string(job.seq_len) +
                           " tokens; predicted " + FormatSeconds(fp.plan->iteration_s) + " a step";
      if (!fp.refusal.empty()) {
        header += "\nnot the best plan found: " + fp.refusal + "; this is the best " +
                  std::string(row->name) + " runs";
      }
      fp.content = row->write(job, fp.plan->plan, header);
    }
    out.push_back(std::move(fp));
  }
  return out;
}

}  // namespace

StatusOr<job::Fixed> ParseFix(std::string_view text) {
  job::Fixed f;
  std::map<std::string, bool> seen;
  size_t begin = 0;
  while (begin <= text.size() && !text.empty()) {
    const size_t comma = std::min(text.find(',', begin), text.size());
    const std::string_view item = text.substr(begin, comma - begin);
    const size_t eq = item.find('=');
    const std::string key(item.substr(0, eq));
    const std::string_view value = eq == std::string_view::npos ? "" : item.substr(eq + 1);
    if (eq == std::string_view::npos || value.empty()) {
      return InvalidInput("--fix: '" + std::string(item) +
                          "' is not KEY=VALUE (keys: tp, pp, dp, "
                          "cp, zero, sp, mbs, vp, schedule, recompute)");
    }
    if (std::find(kFixKeys.begin(), kFixKeys.end(), key) == kFixKeys.end()) {
      return InvalidInput("--fix: unknown key '" + key + "'" + DidYouMean(key, kFixKeys) +
                          " (keys: tp, pp, dp, cp, zero, sp, mbs, vp, schedule, recompute)");
    }
    if (seen[key]) return InvalidInput("--fix: " + key + " is given twice");
    seen[key] = true;
    constexpr int kMost = 1 << 20;
    if (key == "tp") {
      DPLACE_ASSIGN_OR_RETURN(f.tp, PositiveInt(key, value, kMost));
    }
    if (key == "pp") {
      DPLACE_ASSIGN_OR_RETURN(f.pp, PositiveInt(key, value, kMost));
    }
    if (key == "dp") {
      DPLACE_ASSIGN_OR_RETURN(f.dp, PositiveInt(key, value, kMost));
    }
    if (key == "cp") {
      DPLACE_ASSIGN_OR_RETURN(f.cp, PositiveInt(key, value, kMost));
    }
    if (key == "mbs") {
      DPLACE_ASSIGN_OR_RETURN(f.micro_batch, PositiveInt(key, value, kMost));
    }
    if (key == "vp") {
      DPLACE_ASSIGN_OR_RETURN(f.virtual_stages, PositiveInt(key, value, 1024));
    }
    if (key == "zero") {
      if (value.size() != 1 || value[0] < '0' || value[0] > '3') {
        return InvalidInput("--fix: zero=" + std::string(value) + ": expected 0, 1, 2 or 3");
      }
      f.zero = value[0] - '0';
    }
    if (key == "sp") {
      if (value != "on" && value != "off") {
        return InvalidInput("--fix: sp=" + std::string(value) + ": expected on or off");
      }
      f.sequence_parallel = value == "on";
    }
    if (key == "schedule") {
      f.schedule = job::ScheduleNamed(value);
      if (!f.schedule) {
        std::vector<std::string> names;
        for (const job::ScheduleRow& r : sched::Schedules()) names.emplace_back(r.name);
        std::string list;
        for (const std::string& nm : names) list += (list.empty() ? "" : ", ") + nm;
        return InvalidInput("--fix: schedule=" + std::string(value) + " is not a schedule" +
                            DidYouMean(std::string(value), names) + " (" + list + ")");
      }
    }
    if (key == "recompute") {
      for (job::Recompute r :
           {job::Recompute::kNone, job::Recompute::kSelective, job::Recompute::kFull}) {
        if (value == job::RecomputeName(r)) f.recompute = r;
      }
      if (!f.recompute) {
        return InvalidInput("--fix: recompute=" + std::string(value) +
                            ": expected none, selective or full");
      }
    }
    begin = comma + 1;
    if (comma == text.size()) break;
  }
  if (f.schedule && *f.schedule != job::Schedule::kInterleaved && !f.virtual_stages) {
    f.virtual_stages = 1;
  }
  return f;
}

StatusOr<PlanResponse> PlanLoaded(job::Job job, hw::Machine machine, const job::Fixed& fixed,
                                  const std::vector<std::string>& exports) {
  DPLACE_RETURN_IF_ERROR(CheckFixed(fixed, job, machine));
  if (job.dtype == job::Dtype::kFp8 && machine.gpu.peak_flops_fp8 <= 0) {
    return InvalidInput("--dtype fp8: the GPUs of " + machine.name +
                        " have no FP8 peak "
                        "(peak_flops_fp8)");
  }
  for (const std::string& e : exports) {
    if (!io::FindJobExport(e)) return InvalidInput("--export: '" + e + "' is not a framework");
  }
  PlanResponse r;
  const auto began = std::chrono::steady_clock::now();
  r.result = job::Search(job, machine, fixed);
  r.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  if (r.result.configurations == 0) {
    return InvalidInput("--fix: no configuration of " + std::to_string(machine.num_gpus()) +
                        " GPUs satisfies it with global batch " + std::to_string(job.global_batch) +
                        " (the degrees must divide the "
                        "GPUs, the heads and the batch)");
  }
  const bool fixed_any = fixed.tp || fixed.pp || fixed.dp || fixed.cp || fixed.zero ||
                         fixed.micro_batch || fixed.virtual_stages || fixed.sequence_parallel ||
                         fixed.schedule || fixed.recompute;
  if (r.result.best) {
    r.chosen = r.result.best;
    r.why = WhyItWon(*r.result.best, r.result.family_best);
  } else if (fixed_any && r.result.least_memory) {
    // What was asked does not fit: that is the answer (data, not an error).
    r.chosen = r.result.least_memory;
    r.why = "no plan with what --fix gives fits; shown: the one needing least memory";
  } else {
    const double need = r.result.least_memory ? r.result.least_memory->peak_memory() : 0;
    return InvalidInput(job.model.name + " does not fit " + machine.name + " in any plan: the " +
                        "least memory a GPU needs is " + Gib(need) + " (" +
                        (r.result.least_memory ? PlanName(r.result.least_memory->plan) : "") +
                        ", every layer recomputed), and each GPU has " +
                        Gib(machine.gpu.memory_bytes));
  }
  DPLACE_ASSIGN_OR_RETURN(r.exports, Exports(job, machine, fixed, r.result.best, exports));
  r.job = std::move(job);
  r.machine = std::move(machine);
  return r;
}

bool IsPiperFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return false;
  auto j = ParseJson(*text);
  return j.ok() && io::IsPiperInput(*j);
}

StatusOr<PiperResponse> PlanPiperFile(const PiperRequest& request) {
  DPLACE_ASSIGN_OR_RETURN(std::string text, ReadFile(request.path));
  auto parsed = ParseJson(text);
  if (!parsed.ok()) return parsed.status().WithContext(request.path);
  PiperResponse r;
  auto in = io::ReadPiperInstance(JsonNode(*parsed, "(top level)"));
  if (!in.ok()) return in.status().WithContext(request.path);
  r.instance = std::move(*in);
  if (request.devices < 0 || request.devices > 4096) {
    return InvalidInput("--gpus: must be between 1 and 4096");
  }
  if (request.devices > 0) r.instance.max_devices = request.devices;
  if (request.memory_bytes > 0) r.instance.memory_bytes = request.memory_bytes;
  if (request.bandwidth_bytes_per_s > 0)
    r.instance.bandwidth_bytes_per_s = request.bandwidth_bytes_per_s;
  const auto began = std::chrono::steady_clock::now();
  auto plan = job::PlanPiper(r.instance);
  if (!plan.ok()) return plan.status().WithContext(request.path);
  r.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  r.plan = std::move(*plan);
  return r;
}

StatusOr<PlanResponse> PlanJob(const PlanRequest& request) {
  if (request.model.empty()) return InvalidInput("--model: a config.json is required");
  job::Job job;
  // The model first: a file that is no config says so before its flags are weighed.
  DPLACE_ASSIGN_OR_RETURN(job.model, io::LoadModelConfig(request.model));
  if (request.global_batch < 1 || request.global_batch > (int64_t{1} << 24)) {
    return InvalidInput("--global-batch: must be between 1 and 16777216 sequences");
  }
  if (request.seq_len < 1 || request.seq_len > (int64_t{1} << 24)) {
    return InvalidInput("--seq-len: must be between 1 and 16777216 tokens");
  }
  if (request.dtype == "bf16")
    job.dtype = job::Dtype::kBf16;
  else if (request.dtype == "fp16")
    job.dtype = job::Dtype::kFp16;
  else if (request.dtype == "fp8")
    job.dtype = job::Dtype::kFp8;
  else
    return InvalidInput("--dtype: '" + request.dtype + "' is not bf16, fp16 or fp8");
  DPLACE_ASSIGN_OR_RETURN(job::Fixed fixed, ParseFix(request.fix));
  DPLACE_ASSIGN_OR_RETURN(hw::Machine machine, io::LoadMachine(request.cluster));
  if (machine.gpu.memory_bandwidth_bytes_per_s <= 0 ||
      (machine.gpu.peak_flops_half <= 0 && machine.gpu.peak_flops <= 0)) {
    return InvalidInput(request.cluster +
                        ": the planner needs the GPUs' peak FLOP/s and memory "
                        "bandwidth");
  }
  job.seq_len = request.seq_len;
  job.global_batch = request.global_batch;
  job.flash_attention = request.flash_attention;
  job.tp_across_nodes = request.tp_across_nodes;
  return PlanLoaded(std::move(job), std::move(machine), fixed, request.exports);
}

}  // namespace dplace::run
