#include "dplace/run/plan_graph.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "dplace/base/file_util.h"
#include "dplace/base/json_node.h"
#include "dplace/base/units.h"
#include "dplace/cost/collectives.h"
#include "dplace/graph/tensor_parallel.h"
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

// With `only` (by op index), the phases of those ops alone, at the whole step's scale.
Phases PhasesOf(const sim::Problem& p, const sim::KindFit& fit,
                const std::vector<char>* only = nullptr) {
  Phases sum, all;
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    const double t = p.costs.OpTime(op, fit.device);
    const bool counted = only == nullptr || (*only)[op.index()] != 0;
    for (Phases* into : {&all, counted ? &sum : nullptr}) {
      if (into == nullptr) continue;
      switch (p.g().op(op).kind) {
        case graph::OpKind::kForward:
          into->forward_s += t;
          break;
        case graph::OpKind::kBackward:
          into->backward_s += t;
          break;
        case graph::OpKind::kUpdate:
          into->update_s += t;
          break;
      }
    }
  }
  const double total = all.forward_s + all.backward_s + all.update_s;
  if (total <= 0) return sum;
  const double scale = fit.step_s / total;
  return {sum.forward_s * scale, sum.backward_s * scale, sum.update_s * scale};
}

// Megatron-style tensor parallelism of degree t over the graph's column -> row blocks
// (graph/tensor_parallel.h) whose ways t divides: their ops (forward, backward, update) run a
// t-th of their work and hold a t-th of their weights, gradients, optimizer state and of what they
// keep for backward; per micro-batch each block all-reduces its output forward and its input's
// gradient backward, exposed (no TP overlap). t = 1: nothing split.
struct TensorSplit {
  int t = 1;
  Phases sharded;          // the split ops' phases, whole
  double param_share = 0;  // their share of the weights (and so of gradients, optimizer state)
  double saved_share = 0;  // their share of what forward keeps for backward
  std::vector<double> forward_reduce_bytes, backward_reduce_bytes;  // per split block
  int attention = 0, mlp = 0, blocks = 0;                           // split, and found
};

TensorSplit SplitOf(const sim::Problem& p, const sim::KindFit& fit,
                    const std::vector<graph::TensorParallelBlock>& blocks, int t) {
  TensorSplit s{.t = t, .blocks = static_cast<int>(blocks.size())};
  const graph::Graph& g = p.g();
  std::vector<char> forward(static_cast<size_t>(g.num_ops()), 0), all = forward;
  for (const graph::TensorParallelBlock& b : blocks) {
    if (b.ways % t != 0) continue;
    ++(b.attention ? s.attention : s.mlp);
    s.forward_reduce_bytes.push_back(b.forward_reduce_bytes);
    s.backward_reduce_bytes.push_back(b.backward_reduce_bytes);
    for (graph::OpId o : b.ops) {
      forward[o.index()] = all[o.index()] = 1;
      for (const char* suffix : {"/grad", "/update"}) {
        if (auto other = g.FindOp(g.op(o).name + suffix)) all[other->index()] = 1;
      }
    }
  }
  s.sharded = PhasesOf(p, fit, &all);
  double params = 0, of_split = 0;
  for (graph::OpId o : g.op_ids()) {
    if (g.op(o).kind != graph::OpKind::kForward) continue;
    params += g.op(o).param_bytes;
    if (forward[o.index()]) of_split += g.op(o).param_bytes;
  }
  s.param_share = params > 0 ? of_split / params : 0;
  s.saved_share = graph::SavedShare(g, forward);
  return s;
}

double GraphFlops(const graph::Graph& g) {
  double flops = 0;
  for (const graph::Op& op : g.ops()) flops += op.flops;
  return flops;
}

// The data-parallel plan of degree d and ZeRO stage z over `split`'s tensor parallelism, costed
// as job/costs.h costs the job planner's data parallelism: gradients reduced in buckets under the
// last micro-batch's backward (ZeRO 0 all-reduce, ZeRO 1 reduce-scatter), ZeRO 2 and 3
// reduce-scattering each micro-batch's, ZeRO 1 and 2 all-gathering the updated weights, ZeRO 3
// gathering the weights for each forward and backward, every prefetch hidden under the compute it
// feeds where that is longer. ZeRO-3 holds a d-th of the weights and, whole, the op's being
// gathered and the next one's (`largest_op_weights` each, as the job planner holds two layers').
// Ranks in Megatron's order: a TP group's t ranks adjacent, DP groups t apart.
GraphPlanRow DataParallelRow(const sim::KindFit& fit, const Phases& whole, const TensorSplit& split,
                             const hw::Machine& m, int d, int zero, int64_t microbatches,
                             double largest_op_weights) {
  using cost::Collective;
  const int t = split.t;
  const double cut = 1 - 1.0 / t;  // what TP takes off each split op
  const std::vector<int> span = hw::GroupSpan(m, t, d), tp_span = hw::GroupSpan(m, 1, t);
  auto collective = [&](Collective kind, double bytes) {
    return d > 1 ? cost::CollectiveTime(kind, bytes, span, m) : 0.0;
  };
  const Phases ph{whole.forward_s - cut * split.sharded.forward_s,
                  whole.backward_s - cut * split.sharded.backward_s,
                  whole.update_s - cut * split.sharded.update_s};
  const double held = 1 - cut * split.param_share;
  const sim::MemoryNeed need{
      .weights_bytes = fit.need.weights_bytes * held,
      .gradients_bytes = fit.need.gradients_bytes * held,
      .optimizer_bytes = fit.need.optimizer_bytes * held,
      .activations_bytes = fit.need.activations_bytes * (1 - cut * split.saved_share)};
  double tp_s = 0;  // a micro-batch's TP all-reduces, forward and backward
  if (t > 1) {
    for (const std::vector<double>* list :
         {&split.forward_reduce_bytes, &split.backward_reduce_bytes}) {
      for (double bytes : *list)
        tp_s += cost::CollectiveTime(Collective::kAllReduce, bytes, tp_span, m);
    }
  }
  const double dd = d;
  GraphPlanRow row;
  row.family = t > 1 ? "tensor" : zero >= 3 ? "fsdp" : "data-parallel";
  row.gpus = t * d;
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
  row.iteration_s = mb * (forward + backward + tp_s) + exposed + update + regather;
  const std::string gpus = std::to_string(row.gpus) + " " + fit.kind + (row.gpus == 1 ? "" : "s");
  const std::string sharding = zero >= 3 ? "FSDP full shard" : "ZeRO-" + std::to_string(zero);
  if (t > 1) {
    std::string blocks;
    for (const auto& [n, kind] : {std::pair{split.attention, "attention"}, {split.mlp, "MLP"}}) {
      if (n == 0) continue;
      blocks += (blocks.empty() ? "" : " and ") + std::to_string(n) + " " + kind;
    }
    const int split_blocks = split.attention + split.mlp;
    blocks += split_blocks == 1 ? " block" : " blocks";
    if (split_blocks < split.blocks) blocks += " of " + std::to_string(split.blocks);
    row.what = "TP " + std::to_string(t) + " on " + blocks + ", the rest whole, x " + sharding +
               " DP " + std::to_string(d) + " over " + gpus;
  } else {
    row.what = sharding + " over " + gpus;
  }
  row.what += ", " + std::to_string(microbatches) + " micro-batch" +
              (microbatches == 1 ? "" : "es") + " a " + (t > 1 ? "TP group" : fit.kind);
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
  // Tensor parallelism: every degree t inside a node that splits a block, times data
  // parallelism of every degree d (t x d GPUs) that divides the runs, every ZeRO stage.
  const std::vector<graph::TensorParallelBlock> blocks = graph::FindTensorParallelBlocks(step->g());
  std::vector<TensorSplit> splits{{.blocks = static_cast<int>(blocks.size())}};
  for (int t = 2; t <= machine.gpus_per_node() && t <= r.gpus; ++t) {
    if (r.gpus % t != 0) continue;
    TensorSplit split = SplitOf(*step, *gpu, blocks, t);
    if (split.attention + split.mlp > 0) splits.push_back(std::move(split));
  }
  std::vector<GraphPlanRow> data_parallel, fsdp, tensor;
  for (const TensorSplit& split : splits) {
    for (int d = 1; d * split.t <= r.gpus; ++d) {
      if (r.gpus % (d * split.t) != 0 || runs % d != 0) continue;
      for (int zero = 0; zero <= 3; ++zero) {
        if (zero > 0 && d == 1) continue;
        GraphPlanRow row =
            DataParallelRow(*gpu, phases, split, machine, d, zero, runs / d, largest_op_weights);
        (split.t > 1 ? tensor : zero >= 3 ? fsdp : data_parallel).push_back(std::move(row));
      }
    }
  }
  for (const graph::TensorParallelBlock& b : blocks) {
    r.tensor_blocks.push_back({.module = b.module,
                               .attention = b.attention,
                               .ways = b.ways,
                               .ops = static_cast<int>(b.ops.size())});
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
  for (std::vector<GraphPlanRow>* rows : {&data_parallel, &fsdp, &tensor, &pipeline, &op_level}) {
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
      blocks.empty()
          ? "tensor: no column -> row pairs of matrix products (Megatron's attention and MLP "
            "blocks) in the graph, so no tensor-parallel plan"
          : "tensor: splits the column -> row blocks listed whose ways t divides, the rest of the "
            "graph whole on each rank; TP with a pipeline (3-D) is planned for a config.json");
  r.notes.emplace_back(
      "the pipeline and op-level rows are the placers' plans judged by their simulations; the "
      "data-parallel rows the one-GPU step with the machine's collectives");
  r.search_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  return r;
}

}  // namespace dplace::run
