#include "dplace/report/job_report.h"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <sstream>

#include "dplace/base/units.h"
#include "dplace/report/table.h"

namespace dplace::report {
namespace {

constexpr const char* kFlopConvention =
    "model FLOPs as Megatron-LM's num_floating_point_operations (Narayanan et al. 2021, Eq. 3: "
    "3x forward, attention in full, no recomputation); hardware FLOPs add what recomputation "
    "runs again; both over the GPUs' dense BF16 peak";

std::string RecomputeOf(const job::ParallelPlan& p) {
  std::string mode;
  for (const job::StagePlan& s : p.stages) {
    const std::string m = job::RecomputeName(s.recompute);
    if (!mode.empty() && mode != m) return "per-stage";
    mode = m;
  }
  return mode;
}

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

// A degree, or where stages take their own TP and DP degrees, each stage's (e.g. tp2,1,1,1).
std::string PerStage(const job::ParallelPlan& p, int uniform,
                     const std::function<int(const job::StagePlan&)>& of) {
  if (!job::ConfigOf(p).mixed_tp) return std::to_string(uniform);
  std::string s;
  for (const job::StagePlan& sp : p.stages) s += (s.empty() ? "" : ",") + std::to_string(of(sp));
  return s;
}

std::string Config(const job::ParallelPlan& p) {
  std::string s = "tp" + PerStage(p, p.tp, [](const job::StagePlan& sp) { return sp.tp; }) + " pp" +
                  std::to_string(p.pp) + " dp" +
                  PerStage(p, p.dp, [](const job::StagePlan& sp) { return sp.dp; });
  if (p.cp > 1) s += " cp" + std::to_string(p.cp);
  s += " zero" + std::to_string(p.zero);
  if (p.sequence_parallel) s += " sp";
  // A micro-batch's sequences split over each stage's DP ranks.
  s += " mbs" + PerStage(p, p.micro_batch,
                         [&p](const job::StagePlan& sp) { return p.micro_batch * p.dp / sp.dp; });
  if (p.pp > 1) {
    s += " " + std::string(job::RowOf(p.schedule).name);
    if (p.virtual_stages > 1) s += ":" + std::to_string(p.virtual_stages);
  }
  return s;
}

// Layers per virtual stage, runs of three or more written N*K (K stages of N layers).
std::string Layers(const job::ParallelPlan& p) {
  std::string s;
  for (size_t i = 0; i < p.stages.size();) {
    size_t j = i;
    while (j < p.stages.size() && p.stages[j].layers == p.stages[i].layers) ++j;
    const std::string n = std::to_string(p.stages[i].layers);
    std::string part = n;
    if (j - i >= 3) {
      part = n + "*" + std::to_string(j - i);
    } else {
      for (size_t k = i + 1; k < j; ++k) part += "," + n;
    }
    s += (s.empty() ? "" : ",") + part;
    i = j;
  }
  return s;
}

}  // namespace

Json JudgedPlanJson(const run::PlanResponse& r, const job::JudgedPlan& j) {
  const job::ParallelPlan& p = j.plan;
  Json stages = Json::array();
  for (const job::StagePlan& s : p.stages) {
    stages.push_back({{"first_layer", s.first_layer},
                      {"layers", s.layers},
                      {"tp", s.tp},
                      {"dp", s.dp},
                      {"micro_batch", p.micro_batch * p.dp / s.dp},  // its DP ranks' share each
                      {"recompute", job::RecomputeName(s.recompute)}});
  }
  Json memory = Json::array();
  for (size_t rank = 0; rank < j.memory.size(); ++rank) {
    const job::Memory& m = j.memory[rank];
    memory.push_back({{"stage", rank},
                      {"weights", m.weights},
                      {"gradients", m.gradients},
                      {"optimizer", m.optimizer},
                      {"activations", m.activations},
                      {"total", m.total()}});
  }
  const double tokens = static_cast<double>(r.job.global_batch) * r.job.seq_len;
  return {{"family", std::string(job::FamilyName(j.family))},
          {"config",
           {{"tp", p.tp},
            {"pp", p.pp},
            {"dp", p.dp},
            {"cp", p.cp},
            {"zero", p.zero},
            {"sequence_parallel", p.sequence_parallel},
            {"micro_batch", p.micro_batch},
            {"microbatches", p.microbatches},
            {"gradient_accumulation", p.microbatches},
            {"virtual_stages", p.virtual_stages},
            {"schedule", std::string(job::RowOf(p.schedule).name)},
            {"recompute", RecomputeOf(p)},
            {"stages", stages}}},
          {"predicted",
           {{"seconds_per_iteration", j.iteration_s},
            {"tokens_per_s", j.tokens_per_s},
            {"samples_per_s", static_cast<double>(r.job.global_batch) / j.iteration_s},
            {"mfu", j.mfu},
            {"hfu", j.hfu},
            {"model_tflops_per_gpu", j.model_tflops_per_gpu},
            {"tokens_per_iteration", tokens},
            {"breakdown",
             {{"compute_s", j.parts.compute_s},
              {"bubble_s", j.parts.bubble_s},
              {"tensor_parallel_s", j.parts.tp_s},
              {"recompute_s", j.parts.recompute_s},
              {"data_parallel_s", j.parts.data_parallel_s},
              {"optimizer_s", j.parts.optimizer_s}}}}},
          {"memory_per_rank", memory},
          {"peak_memory", j.peak_memory()},
          {"fits", j.fits}};
}

Json PlanJson(const run::PlanResponse& r) {
  const job::Transformer& m = r.job.model;
  Json out = {{"model",
               {{"name", m.name},
                {"layers", m.layers},
                {"hidden", m.hidden},
                {"heads", m.heads},
                {"kv_heads", m.kv_heads},
                {"ffn", m.ffn},
                {"vocab", m.vocab},
                {"parameters", job::TotalParameters(m)}}},
              {"machine",
               {{"name", r.machine.name},
                {"gpus", r.machine.num_gpus()},
                {"gpus_per_node", r.machine.gpus_per_node()},
                {"gpu_memory", r.machine.gpu.memory_bytes}}},
              {"global_batch", r.job.global_batch},
              {"seq_len", r.job.seq_len},
              {"dtype", job::DtypeName(r.job.dtype)},
              {"flop_convention", kFlopConvention},
              {"search",
               {{"configurations", r.result.configurations},
                {"plans_judged", r.result.judged},
                {"unproved_configurations", r.result.unproved},
                {"seconds", r.search_s}}},
              {"why", r.why}};
  out["best"] = r.chosen ? JudgedPlanJson(r, *r.chosen) : Json();
  out["fits"] = r.chosen && r.chosen->fits;
  Json alternatives = Json::array();
  for (const job::JudgedPlan& j : r.result.family_best)
    alternatives.push_back(JudgedPlanJson(r, j));
  out["alternatives"] = alternatives;
  Json exports = Json::array();
  for (const run::FrameworkPlan& f : r.exports) {
    Json e = {{"framework", f.framework}, {"refusal", f.refusal}};
    e["plan"] = f.plan ? JudgedPlanJson(r, *f.plan) : Json();
    exports.push_back(e);
  }
  out["exports"] = exports;
  return out;
}

std::string PlanTable(const run::PlanResponse& r) {
  std::ostringstream out;
  const job::Transformer& m = r.job.model;
  out << m.name << " (" << Fixed(job::TotalParameters(m) / 1e9, 2) << "B parameters, " << m.layers
      << " layers) on " << r.machine.name << " (" << r.machine.num_gpus() << " GPUs), global batch "
      << r.job.global_batch << " x " << r.job.seq_len << " tokens, " << job::DtypeName(r.job.dtype)
      << "\n";
  std::vector<std::vector<std::string>> rows = {{"family", "plan", "stages (layers)", "recompute",
                                                 "s/iter", "tokens/s", "MFU", "HFU", "peak/GPU",
                                                 "fits"}};
  auto row = [&](const job::JudgedPlan& j, bool best) {
    rows.push_back({std::string(job::FamilyName(j.family)) + (best ? " *" : ""), Config(j.plan),
                    Layers(j.plan), RecomputeOf(j.plan), Fixed(j.iteration_s, 3),
                    Fixed(j.tokens_per_s, 0), FormatPercent(j.mfu), FormatPercent(j.hfu),
                    FormatBytes(j.peak_memory()), j.fits ? "yes" : "NO"});
  };
  if (r.chosen) row(*r.chosen, true);
  for (const job::JudgedPlan& j : r.result.family_best) {
    if (r.chosen && j.family == r.chosen->family) continue;
    row(j, false);
  }
  out << RenderTable(rows);
  if (r.chosen) {
    out << "memory per GPU of the plan (weights, gradients, optimizer, activations):\n";
    for (size_t s = 0; s < r.chosen->memory.size(); ++s) {
      const job::Memory& mm = r.chosen->memory[s];
      out << "  stage " << s << ": " << FormatBytes(mm.weights) << " + "
          << FormatBytes(mm.gradients) << " + " << FormatBytes(mm.optimizer) << " + "
          << FormatBytes(mm.activations) << " = " << FormatBytes(mm.total()) << " of "
          << FormatBytes(r.machine.gpu.memory_bytes) << "\n";
    }
    const job::Breakdown& b = r.chosen->parts;
    out << "slowest rank: compute " << FormatSeconds(b.compute_s) << ", bubble "
        << FormatSeconds(b.bubble_s) << ", TP communication " << FormatSeconds(b.tp_s)
        << ", recomputation " << FormatSeconds(b.recompute_s) << ", exposed DP "
        << FormatSeconds(b.data_parallel_s) << ", optimizer " << FormatSeconds(b.optimizer_s)
        << "\n";
  }
  out << "why: " << r.why << "\n";
  out << "MFU/HFU: " << kFlopConvention << "\n";
  out << "searched " << r.result.configurations << " configurations, judged " << r.result.judged
      << " plans in " << FormatSeconds(r.search_s);
  if (r.result.unproved > 0) {
    out << " (" << r.result.unproved
        << " zero-bubble configurations searched past the DP's front only within a budget: not "
           "proved)";
  }
  out << "; times are a roofline at datasheet peaks (docs/planning.md, \"What the cost model "
         "assumes\")\n";
  for (const run::FrameworkPlan& f : r.exports) {
    if (!f.refusal.empty()) {
      out << f.framework << ": " << f.refusal << "; "
          << (f.plan ? "written: the best plan it runs, " + Config(f.plan->plan) + ", " +
                           Fixed(f.plan->iteration_s, 3) + " s/iter"
                     : std::string("it runs no plan that fits"))
          << "\n";
    }
  }
  return out.str();
}

Json PiperJson(const run::PiperResponse& r) {
  Json stages = Json::array();
  for (const job::PiperStage& s : r.plan.stages) {
    Json layers = Json::array(), options = Json::array();
    for (size_t i = 0; i < s.layers.size(); ++i) {
      const job::PiperLayer& layer = r.instance.layers[static_cast<size_t>(s.layers[i])];
      layers.push_back(layer.name);
      options.push_back(
          layer.options[static_cast<size_t>(s.t)][static_cast<size_t>(s.option[i])].id);
    }
    stages.push_back({{"layers", layers}, {"tp", s.t}, {"dp", s.d}, {"options", options}});
  }
  return {
      {"model", "piper"},
      {"machine",
       {{"max_devices", r.instance.max_devices},
        {"memory_per_device", r.instance.memory_bytes},
        {"bandwidth", r.instance.bandwidth_bytes_per_s},
        {"microbatches", r.instance.microbatches}}},
      {"best",
       {{"config", {{"stages", stages}, {"devices", r.plan.devices}, {"dp_sum", r.plan.dp_sum}}},
        {"predicted", {{"time_per_sample", r.plan.time_per_sample_s}}}}},
      {"search", {{"seconds", r.search_s}, {"ideals", r.plan.ideals}}}};
}

std::string PiperTable(const run::PiperResponse& r) {
  std::ostringstream out;
  out << "Piper's DP: " << r.instance.layers.size() << " layers, at most " << r.instance.max_devices
      << " devices of " << FormatBytes(r.instance.memory_bytes) << ", " << r.instance.microbatches
      << " micro-batches a batch\n";
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", r.plan.time_per_sample_s);
  out << "time per sample " << buf << " (the file's unit), " << r.plan.stages.size()
      << " stages on " << r.plan.devices << " devices, sum of data-parallel degrees "
      << r.plan.dp_sum << "; " << r.plan.ideals << " successor-closed sets, "
      << FormatSeconds(r.search_s) << "\n";
  for (size_t i = 0; i < r.plan.stages.size(); ++i) {
    const job::PiperStage& s = r.plan.stages[i];
    int recomputing = 0;
    for (size_t j = 0; j < s.layers.size(); ++j) {
      const auto& layer = r.instance.layers[static_cast<size_t>(s.layers[j])];
      if (layer.options[static_cast<size_t>(s.t)][static_cast<size_t>(s.option[j])].id !=
          "vanilla") {
        ++recomputing;
      }
    }
    out << "  stage " << i << ": " << s.layers.size() << " layers, tp " << s.t << ", dp " << s.d
        << ", " << recomputing << " recomputing\n";
  }
  return out.str();
}

namespace {

constexpr const char* kGraphFlopConvention =
    "the graph's FLOPs a step (forward, backward and update ops, as the graph counts them; no "
    "recomputation, so HFU = MFU) over the GPUs' dense half-precision peak";

Json GraphRowJson(const run::GraphPlanRow& row) {
  Json memory = {{"total", row.memory.Total()}};
  if (row.split_memory) {
    memory["weights"] = row.memory.weights_bytes;
    memory["gradients"] = row.memory.gradients_bytes;
    memory["optimizer"] = row.memory.optimizer_bytes;
    memory["activations"] = row.memory.activations_bytes;
  }
  return {{"family", row.family},
          {"plan", row.what},
          {"gpus", row.gpus},
          {"predicted",
           {{"seconds_per_iteration", row.iteration_s},
            {"samples_per_s", row.samples_per_s},
            {"mfu", row.mfu},
            {"hfu", row.mfu}}},
          {"memory_per_rank", Json::array({memory})},
          {"peak_memory", row.memory.Total()},
          {"fits", row.fits},
          {"note", row.note}};
}

}  // namespace

Json GraphPlanJson(const run::GraphPlanResponse& r) {
  Json out = {{"model", {{"name", r.model}, {"batch", r.graph_batch}}},
              {"machine", {{"gpu", r.gpu_kind}, {"gpus", r.gpus}}},
              {"global_batch", r.global_batch},
              {"flop_convention", kGraphFlopConvention},
              {"search", {{"seconds", r.search_s}}},
              {"notes", r.notes}};
  out["best"] = r.best >= 0 ? GraphRowJson(r.rows[static_cast<size_t>(r.best)]) : Json();
  out["fits"] = r.best >= 0;
  Json alternatives = Json::array();
  for (const run::GraphPlanRow& row : r.rows) alternatives.push_back(GraphRowJson(row));
  out["alternatives"] = alternatives;
  Json blocks = Json::array();
  for (const run::TensorBlockRow& b : r.tensor_blocks) {
    blocks.push_back({{"module", b.module},
                      {"kind", b.attention ? "attention" : "mlp"},
                      {"ways", b.ways},
                      {"ops", b.ops}});
  }
  out["tensor_parallel_blocks"] = blocks;
  return out;
}

std::string GraphPlanTable(const run::GraphPlanResponse& r) {
  std::ostringstream out;
  out << r.model << " (batch " << r.graph_batch << ") on " << r.gpus << " " << r.gpu_kind
      << (r.gpus == 1 ? "" : "s") << ", global batch " << r.global_batch << "\n";
  std::vector<std::vector<std::string>> rows = {
      {"family", "plan", "GPUs", "iteration", "samples/s", "MFU", "peak/GPU", "fits"}};
  auto add = [&](const run::GraphPlanRow& row, bool best) {
    rows.push_back({row.family + (best ? " *" : ""), row.what, std::to_string(row.gpus),
                    FormatSeconds(row.iteration_s), Fixed(row.samples_per_s, 0),
                    FormatPercent(row.mfu), FormatBytes(row.memory.Total()),
                    row.fits ? "yes" : "NO"});
  };
  if (r.best >= 0) add(r.rows[static_cast<size_t>(r.best)], true);
  for (size_t i = 0; i < r.rows.size(); ++i) {
    if (static_cast<int>(i) != r.best) add(r.rows[i], false);
  }
  out << RenderTable(rows);
  if (r.best >= 0) {
    const run::GraphPlanRow& best = r.rows[static_cast<size_t>(r.best)];
    if (best.split_memory) {
      out << "memory per GPU of the plan: " << FormatBytes(best.memory.weights_bytes)
          << " weights + " << FormatBytes(best.memory.gradients_bytes) << " gradients + "
          << FormatBytes(best.memory.optimizer_bytes) << " optimizer + "
          << FormatBytes(best.memory.activations_bytes) << " activations\n";
    }
    // Why it won: the runner-up that fits, and by how much.
    const run::GraphPlanRow* second = nullptr;
    for (const run::GraphPlanRow& row : r.rows) {
      if (&row == &best || !row.fits) continue;
      if (second == nullptr || row.iteration_s < second->iteration_s) second = &row;
    }
    if (second != nullptr) {
      out << "why: " << best.family << " is " << Fixed(second->iteration_s / best.iteration_s, 2)
          << "x faster than the runner-up, " << second->family << " (" << second->what << ")\n";
    }
  } else {
    out << "no plan fits\n";
  }
  for (const run::GraphPlanRow& row : r.rows) {
    if (!row.note.empty()) out << row.family << ": " << row.note << "\n";
  }
  if (!r.tensor_blocks.empty()) {
    // Blocks alike counted together: "12 attention (12 ways), 12 MLP (3072 ways)".
    std::vector<std::pair<std::string, int>> kinds;
    for (const run::TensorBlockRow& b : r.tensor_blocks) {
      const std::string kind =
          std::string(b.attention ? "attention" : "MLP") + " (" + std::to_string(b.ways) + " ways)";
      auto it =
          std::find_if(kinds.begin(), kinds.end(), [&](const auto& k) { return k.first == kind; });
      if (it == kinds.end()) {
        kinds.emplace_back(kind, 1);
      } else {
        ++it->second;
      }
    }
    out << "tensor-parallel blocks: ";
    for (size_t i = 0; i < kinds.size(); ++i)
      out << (i ? ", " : "") << kinds[i].second << " " << kinds[i].first;
    out << " (first: " << r.tensor_blocks.front().module << ")\n";
  }
  for (const std::string& note : r.notes) out << "note: " << note << "\n";
  out << "MFU: " << kGraphFlopConvention << "\n";
  out << "planned in " << FormatSeconds(r.search_s) << "\n";
  return out.str();
}

}  // namespace dplace::report
