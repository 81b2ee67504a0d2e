#include "dplace/run/plan_graph.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "dplace/base/file_util.h"
#include "dplace/base/json_node.h"
#include "dplace/base/units.h"
#include "dplace/cost/collectives.h"
#include "dplace/hw/machine.h"
#include "dplace/io/load.h"
#include "dplace/run/decide.h"
#include "dplace/run/load.h"
#include "dplace/run/plan_job.h"
#include "dplace/run/run.h"

namespace dplace::run {
namespace {

// PyTorch DDP's default gradient bucket (bucket_cap_mb = 25): the last bucket's reduction
// starts after the last backward op, so at least it is exposed.
constexpr double kBucketBytes = 25.0 * 1024 * 1024;
// A pipeline step takes at most this many micro-batches (the graph's batch each); a global batch
// of more accumulates several such steps.
constexpr int64_t kMaxPipelineMicrobatches = 32;

// The one-GPU step's compute by phase: forward, backward and update, each the sum of its ops'
// times on that GPU scaled to the simulated step (which adds the waits of its transfers).
struct Phases {
  double forward_s = 0, backward_s = 0, update_s = 0;
};

Phases PhasesOf(const sim::Problem& p, const sim::KindFit& fit) {
  Phases sum;
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    const double t = p.costs.OpTime(op, fit.device);
    switch (p.g().op(op).kind) {
      case graph::OpKind::kForward:
        sum.forward_s += t;
        break;
      case graph::OpKind::kBackward:
        sum.backward_s += t;
        break;
      case graph::OpKind::kUpdate:
        sum.update_s += t;
        break;
    }
  }
  const double total = sum.forward_s + sum.backward_s + sum.update_s;
  if (total <= 0) return sum;
  const double scale = fit.step_s / total;
  return {sum.forward_s * scale, sum.backward_s * scale, sum.update_s * scale};
}

double GraphFlops(const graph::Graph& g) {
  double flops = 0;
  for (const graph::Op& op : g.ops()) flops += op.flops;
  return flops;
}

// The data-parallel plan of degree d and ZeRO stage z, costed as job/costs.h costs the job
// planner's data parallelism: gradients reduced in buckets under the last micro-batch's backward
// (ZeRO 0 all-reduce, ZeRO 1 reduce-scatter), ZeRO 2 and 3 reduce-scattering each micro-batch's,
// ZeRO 1 and 2 all-gathering the updated weights, ZeRO 3 gathering the weights for each forward
// and backward, every prefetch hidden under the compute it feeds where that is longer. ZeRO-3
// holds a d-th of the weights and, whole, the op's being gathered and the next one's
// (`largest_op_weights` each, as the job planner holds two layers').
GraphPlanRow DataParallelRow(const sim::KindFit& fit, const Phases& ph, const hw::Machine& m, int d,
                             int zero, int64_t microbatches, double largest_op_weights) {
  using cost::Collective;
  const std::vector<int> span = hw::GroupSpan(m, 1, d);
  auto collective = [&](Collective kind, double bytes) {
    return d > 1 ? cost::CollectiveTime(kind, bytes, span, m) : 0.0;
  };
  const sim::MemoryNeed& need = fit.need;
  const double dd = d;
  GraphPlanRow row;
  row.family = zero >= 3 ? "fsdp" : "data-parallel";
  row.gpus = d;
  row.memory = {.weights_bytes = zero >= 3 && d > 1
                                     ? need.weights_bytes / dd + 2 * largest_op_weights
                                     : need.weights_bytes,
                .gradients_bytes = need.gradients_bytes / (zero >= 2 ? dd : 1),
                .optimizer_bytes = need.optimizer_bytes / (zero >= 1 ? dd : 1),
                .activations_bytes = need.activations_bytes};
  const auto mb = static_cast<double>(microbatches);
  double forward = ph.forward_s, backward = ph.backward_s;
  if (zero >= 2 && d > 1) {
    const double gather = zero >= 3 ? collective(Collective::kAllGather, need.weights_bytes) : 0;
    const double reduce = collective(Collective::kReduceScatter, need.gradients_bytes);
    forward += std::max(0.0, gather - ph.forward_s);
    backward += std::max(0.0, gather + reduce - ph.backward_s);
  }
  double exposed = 0;
  if (zero <= 1 && d > 1 && need.gradients_bytes > 0) {
    const double reduce = collective(
        zero == 0 ? Collective::kAllReduce : Collective::kReduceScatter, need.gradients_bytes);
    const double last_bucket = reduce * std::min(1.0, kBucketBytes / need.gradients_bytes);
    exposed = std::max(last_bucket, reduce - ph.backward_s);
  }
  const double update = ph.update_s / (zero >= 1 ? dd : 1);
  const double regather =
      (zero == 1 || zero == 2) ? collective(Collective::kAllGather, need.weights_bytes) : 0;
  row.iteration_s = mb * (forward + backward) + exposed + update + regather;
  row.what = (zero >= 3 ? "FSDP full shard" : "ZeRO-" + std::to_string(zero)) + " over " +
             std::to_string(d) + " " + fit.kind + (d == 1 ? "" : "s") + ", " +
             std::to_string(microbatches) + " micro-batch" + (microbatches == 1 ? "" : "es") +
             " a " + fit.kind;
  row.fits = fit.runs && row.memory.Total() <= fit.capacity_bytes;
  if (!row.fits) {
    row.note = "needs " + FormatBytes(row.memory.Total()) + " a " + fit.kind + ", has " +
               FormatBytes(fit.capacity_bytes);
  }
  return row;
}

// A placer's result as a row: the busiest device's simulated peak, `steps` of its value a step.
GraphPlanRow PlacedRow(std::string family, const sim::Problem& p, const PlacerResult& r,
                       double steps, std::string what) {
  GraphPlanRow row{.family = std::move(family), .what = std::move(what), .split_memory = false};
  std::vector<bool> used(static_cast<size_t>(p.num_devices()), false);
  for (sim::OpId op : r.placement.ids()) used[r.placement[op].index()] = true;
  for (sim::DeviceId d{0}; d < p.num_devices(); ++d) {
    if (!used[d.index()]) continue;
    // A group of replicas counts its members.
    const std::string& name = p.c().device(d).name;
    row.gpus += 1 + static_cast<int>(std::count(name.begin(), name.end(), '+'));
    row.memory.activations_bytes =
        std::max(row.memory.activations_bytes, r.evaluation.devices[d].peak_memory_bytes);
  }
  row.iteration_s = r.evaluation.value * steps;
  row.fits = r.evaluation.feasible;
  row.note = r.evaluation.feasible ? r.note : r.evaluation.reason;
  return row;
}

// The devices a plan uses, as "gpu0, gpu1" (the op-level placers) or, for groups of replicas,
// "3 stages of 8, 4, 4 GPUs".
std::string DeviceList(const sim::Problem& p, const sim::Placement& placement) {
  std::vector<bool> used(static_cast<size_t>(p.num_devices()), false);
  for (sim::OpId op : placement.ids()) used[placement[op].index()] = true;
  std::string names, sizes;
  int count = 0;
  bool grouped = false;
  for (sim::DeviceId d{0}; d < p.num_devices(); ++d) {
    if (!used[d.index()]) continue;
    const std::string& name = p.c().device(d).name;
    const auto members = 1 + std::count(name.begin(), name.end(), '+');
    grouped = grouped || members > 1;
    sizes += (sizes.empty() ? "" : ", ") + std::to_string(members);
    if (++count <= 6) names += (names.empty() ? "" : ", ") + name;
  }
  if (grouped) {
    return std::to_string(count) + (count == 1 ? " stage of " : " stages of ") + sizes + " GPUs";
  }
  if (count > 6) names += ", ... (" + std::to_string(count) + ")";
  return names;
}

}  // namespace

ModelKind KindOfModel(const std::string& path) {
  if (IsPiperFile(path)) return ModelKind::kPiper;
  return io::IsGraphFile(path) ? ModelKind::kGraph : ModelKind::kConfig;
}

StatusOr<GraphPlanResponse> PlanGraph(const GraphPlanRequest& request) {
  const auto began = std::chrono::steady_clock::now();
  if (request.global_batch < 1 || request.global_batch > (int64_t{1} << 40)) {
    return InvalidInput("--global-batch: must be between 1 and 2^40 samples");
  }
  if (!(request.time_limit_s > 0 && request.time_limit_s <= 1e6)) {
    return InvalidInput("--time-limit: must be more than 0 and at most 1e6 seconds");
  }
  DPLACE_ASSIGN_OR_RETURN(io::LoadedGraph loaded, LoadGraphFile({.path = request.model,
                                                                 .training = true,
                                                                 .training_as_given = true,
                                                                 .shapes = request.shapes}));
  if (loaded.batch <= 0) {
    return InvalidInput(request.model +
                        ": the graph does not say its batch size, so a global batch cannot be "
                        "split over it (an ONNX model's first input, a dplace graph's \"batch\")");
  }
  if (request.global_batch % loaded.batch != 0) {
    return InvalidInput("--global-batch: " + std::to_string(request.global_batch) +
                        " is not a multiple of the graph's batch " + std::to_string(loaded.batch));
  }
  DPLACE_ASSIGN_OR_RETURN(hw::Machine machine, io::LoadMachine(request.cluster));
  DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<const hw::Cluster> cluster,
                          io::LoadCluster(request.cluster));
  // The machine's GPUs only (a preset's host CPU runs no stage of the job).
  DPLACE_ASSIGN_OR_RETURN(cluster, RestrictCluster(cluster, {}, machine.num_gpus()));
  DPLACE_ASSIGN_OR_RETURN(auto step, MakeLoadedProblem(loaded, cluster, "step", request.model));
  GraphPlanResponse r{.model = request.model,
                      .gpu_kind = machine.gpu.kind,
                      .gpus = machine.num_gpus(),
                      .graph_batch = loaded.batch,
                      .global_batch = request.global_batch};
  const int64_t runs = request.global_batch / loaded.batch;  // runs of the graph a step
  const std::vector<sim::KindFit> fits = sim::FitOnOneDevice(*step, loaded.batch);
  const sim::KindFit* gpu = nullptr;
  for (const sim::KindFit& f : fits) {
    if (f.kind == machine.gpu.kind && gpu == nullptr) gpu = &f;
  }
  if (gpu == nullptr) return InvalidInput(request.cluster + ": no " + machine.gpu.kind);

  // Data parallelism: every degree d of the GPUs that divides the runs, every ZeRO stage.
  const Phases phases = PhasesOf(*step, *gpu);
  double largest_op_weights = 0;
  for (const graph::Op& op : step->g().ops()) {
    if (op.kind == graph::OpKind::kForward)
      largest_op_weights = std::max(largest_op_weights, op.param_bytes);
  }
  std::vector<GraphPlanRow> data_parallel, fsdp;
  for (int d = 1; d <= r.gpus; ++d) {
    if (r.gpus % d != 0 || runs % d != 0) continue;
    for (int zero = 0; zero <= 3; ++zero) {
      if (zero > 0 && d == 1) continue;
      GraphPlanRow row =
          DataParallelRow(*gpu, phases, machine, d, zero, runs / d, largest_op_weights);
      (zero >= 3 ? fsdp : data_parallel).push_back(std::move(row));
    }
  }

  // The pipeline (dp's split, replicas chosen with it) and the op-level placers, each in half the
  // time limit.
  const double half = request.time_limit_s / 2;
  int64_t microbatches = std::min(runs, kMaxPipelineMicrobatches);
  while (runs % microbatches != 0) --microbatches;
  std::vector<GraphPlanRow> pipeline, op_level;
  {
    DPLACE_ASSIGN_OR_RETURN(auto problem,
                            MakeLoadedProblem(loaded, cluster, "pipeline", request.model, "",
                                              "1f1b:" + std::to_string(microbatches)));
    DPLACE_ASSIGN_OR_RETURN(problem, WithReplicas(problem, "auto", half / 2));
    RunRequest run{.placer = "dp", .seed = request.seed, .limits = {.seconds = half / 2}};
    auto placed = Run(problem, run);
    if (placed.ok()) {
      pipeline.push_back(PlacedRow("pipeline", *problem, *placed, static_cast<double>(runs),
                                   "dp's split: " + DeviceList(*problem, placed->placement) +
                                       ", 1F1B over " + std::to_string(microbatches) +
                                       (microbatches == 1 ? " micro-batch" : " micro-batches")));
    } else {
      r.notes.push_back("pipeline: " + placed.status().message());
    }
  }
  {
    DPLACE_ASSIGN_OR_RETURN(std::vector<std::string> names,
                            PlacerNames("one-shot,search", step->objective));
    RunRequest run{.seed = request.seed, .limits = {.seconds = half}};
    DPLACE_ASSIGN_OR_RETURN(ValidRequest valid, Validate(run, names, half));
    DPLACE_ASSIGN_OR_RETURN(std::vector<PlacerResult> results, RunAll(step, std::move(valid)));
    const PlacerResult& best = results[static_cast<size_t>(BestIndex(results))];
    op_level.push_back(
        PlacedRow("op-level", *step, best, static_cast<double>(runs),
                  best.placer + "'s plan of one step on " + DeviceList(*step, best.placement)));
  }

  // Per family its best: the fastest that fits, else the one needing least memory.
  auto best_of = [](std::vector<GraphPlanRow>& rows) {
    std::stable_sort(rows.begin(), rows.end(), [](const GraphPlanRow& a, const GraphPlanRow& b) {
      if (a.fits != b.fits) return a.fits;
      return a.fits ? a.iteration_s < b.iteration_s : a.memory.Total() < b.memory.Total();
    });
  };
  const double flops = GraphFlops(step->g()) * static_cast<double>(runs);
  const double peak =
      machine.gpu.peak_flops_half > 0 ? machine.gpu.peak_flops_half : machine.gpu.peak_flops;
  for (std::vector<GraphPlanRow>* rows : {&data_parallel, &fsdp, &pipeline, &op_level}) {
    if (rows->empty()) continue;
    best_of(*rows);
    GraphPlanRow row = rows->front();
    if (row.iteration_s > 0) {
      row.samples_per_s = static_cast<double>(request.global_batch) / row.iteration_s;
      row.mfu = flops / (row.iteration_s * row.gpus * peak);
    }
    r.rows.push_back(std::move(row));
  }
  for (size_t i = 0; i < r.rows.size(); ++i) {
    if (!r.rows[i].fits) continue;
    if (r.best < 0 || r.rows[i].iteration_s < r.rows[static_cast<size_t>(r.best)].iteration_s)
      r.best = static_cast<int>(i);
  }
  r.notes.emplace_back(
      "tensor parallelism and 3-D plans shard a transformer's heads: plan its config.json "
      "(docs/planning.md)");
  r.notes.emplace_back(
      "the pipeline and op-level rows are the placers' plans judged by their simulations; the "
      "data-parallel rows the one-GPU step with the machine's collectives");
  r.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return r;
}

}  // namespace dplace::run
