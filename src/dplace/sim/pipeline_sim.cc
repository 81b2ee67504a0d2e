#include "dplace/sim/pipeline_sim.h"

#include <algorithm>
#include <deque>
#include <map>
#include <optional>
#include <tuple>

#include "dplace/base/units.h"
#include "dplace/sim/constraints.h"
#include "dplace/sim/max_load.h"

namespace dplace::sim {

namespace {

bool IsForward(const graph::Op& op) { return op.kind == graph::OpKind::kForward; }

// The order in which stage `s` of `num_stages` runs its F and B (or I) tasks: (micro-batch,
// backward?).
std::vector<std::pair<int, bool>> StageOrder(PipelineSchedule schedule, int s, int num_stages,
                                             int m, bool training) {
  std::vector<std::pair<int, bool>> order;
  if (!training) {
    for (int i = 0; i < m; ++i) order.emplace_back(i, false);
    return order;
  }
  if (schedule == PipelineSchedule::kGPipe) {
    for (int i = 0; i < m; ++i) order.emplace_back(i, false);
    for (int i = m - 1; i >= 0; --i) order.emplace_back(i, true);
    return order;
  }
  const int depth = num_stages - 1 - s;
  const int warmup = std::min(schedule == PipelineSchedule::kZBH2 ? 2 * depth : depth, m);
  int next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) order.emplace_back(next_f, false);
  while (next_f < m) {
    order.emplace_back(next_f++, false);
    order.emplace_back(next_b++, true);
  }
  while (next_b < m) order.emplace_back(next_b++, true);
  return order;
}

// W tasks stage `s` lets wait before it runs one ahead of its next F or I: what the schedule's
// memory formula allows (ZB-H1 (S-s) M_B + s M_W, ZB-H2 (2S-2s-1) M_B + 2s M_W on stage s).
size_t WeightAllowance(PipelineSchedule schedule, int s) {
  return static_cast<size_t>(schedule == PipelineSchedule::kZBH2 ? 2 * s : s);
}

// A task's phase: 0 forward, 1 backward or input gradients, 2 weight gradients (split only).
int Phase(const graph::Op& op, bool split) {
  if (op.kind == graph::OpKind::kForward) return 0;
  return split && op.kind == graph::OpKind::kUpdate ? 2 : 1;
}

// Inference: every forward output of the device's ops, per micro-batch (what is alive at once is
// bounded by that).
IdVector<DeviceId, double> ForwardOutputsPerDevice(const graph::Graph& g,
                                                   const Placement& placement, int num_devices) {
  IdVector<DeviceId, double> bytes(static_cast<size_t>(num_devices), 0);
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    if (!g.tensor(t).view && IsForward(g.op(g.tensor(t).producer)))
      bytes[placement[g.tensor(t).producer]] += g.tensor(t).bytes;
  }
  return bytes;
}

// A forward op that reads nothing, holds no weights and computes nothing (an exported Constant):
// every stage that uses it can make it itself, so it orders no stage before another. So is its
// backward op, which computes nothing and feeds nothing (a constant has no gradient to pass on).
bool Replicable(const graph::Graph& g, OpId op) {
  const graph::Op& o = g.op(op);
  if (o.param_bytes > 0 || o.flops > 0) return false;
  if (IsForward(o) ? !g.Predecessors(op).empty() : !g.Successors(op).empty()) return false;
  return std::all_of(o.time_s.begin(), o.time_s.end(),
                     [](const auto& kind_time) { return kind_time.second == 0; });
}

// `devices` (one stage each, in the order of their first forward op) reordered so that every
// forward tensor flows to a later stage (Kahn's algorithm, the given order breaking ties); what
// replicable ops make is left out. InvalidInput when two stages feed each other.
StatusOr<std::vector<DeviceId>> StagesInDataOrder(const graph::Graph& g, const Placement& placement,
                                                  const std::vector<DeviceId>& devices) {
  const size_t n = devices.size();
  std::map<DeviceId, size_t> index;
  for (size_t i = 0; i < n; ++i) index[devices[i]] = i;
  std::vector<std::vector<char>> feeds(n, std::vector<char>(n, 0));
  std::vector<int> indegree(n, 0);
  for (const graph::Edge& e : g.edges()) {
    if (!IsForward(g.op(e.from)) || !IsForward(g.op(e.to)) || Replicable(g, e.from)) continue;
    const size_t a = index[placement[e.from]], b = index[placement[e.to]];
    if (a == b || feeds[a][b]) continue;
    feeds[a][b] = 1;
    ++indegree[b];
  }
  std::vector<DeviceId> order;
  std::vector<char> done(n, 0);
  while (order.size() < n) {
    size_t next = n;
    for (size_t i = 0; i < n && next == n; ++i) {
      if (!done[i] && indegree[i] == 0) next = i;
    }
    if (next == n) {
      return InvalidInput(
          "the plan is not a pipeline of contiguous stages: its stages send each other forward "
          "tensors in both directions (split at unit boundaries, e.g. place --unit module)");
    }
    done[next] = 1;
    order.push_back(devices[next]);
    for (size_t j = 0; j < n; ++j) {
      if (feeds[next][j]) --indegree[j];
    }
  }
  return order;
}

// (holder, tensor, whether sized as a CPU holds it): what a stage holds, a tensor at a time.
using Holdings = std::vector<std::tuple<DeviceId, graph::TensorId, bool>>;

// Per device, the bytes of what it holds, each (holder, tensor) once.
IdVector<DeviceId, double> HeldBytes(const Problem& p, Holdings held) {
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  IdVector<DeviceId, double> bytes(p.c().devices().size(), 0);
  for (const auto& [d, t, on_cpu] : held) bytes[d] += p.g().tensor(t).BytesOn(on_cpu);
  return bytes;
}

}  // namespace

StatusOr<std::vector<DeviceId>> PipelineStageOrder(const graph::Graph& g,
                                                   const Placement& placement, int num_devices) {
  // Devices holding ops, first by the topological position of their first forward op (ties of the
  // data order below), then in data order.
  IdVector<DeviceId, int> first_pos(static_cast<size_t>(num_devices), -1);
  IdVector<DeviceId, int> any_pos(static_cast<size_t>(num_devices), -1);
  const auto& topo = g.TopologicalOrder();
  for (size_t pos = 0; pos < topo.size(); ++pos) {
    const DeviceId d = placement[topo[pos]];
    if (any_pos[d] < 0) any_pos[d] = static_cast<int>(pos);
    if (first_pos[d] < 0 && IsForward(g.op(topo[pos]))) first_pos[d] = static_cast<int>(pos);
  }
  std::vector<DeviceId> devices;
  for (DeviceId d{0}; d < num_devices; ++d) {
    if (any_pos[d] >= 0) devices.push_back(d);
  }
  auto key = [&](DeviceId d) {
    const int f = first_pos[d];
    return f >= 0 ? f : static_cast<int>(topo.size()) + any_pos[d];
  };
  std::sort(devices.begin(), devices.end(),
            [&](DeviceId a, DeviceId b) { return key(a) < key(b); });
  return StagesInDataOrder(g, placement, devices);
}

IdVector<DeviceId, double> HeldPerMicrobatch(const Problem& p, const Placement& placement) {
  // Per device, the storages it holds for one micro-batch between its forward and its backward:
  // forward tensors (by their base) that a backward op on the device keeps, those it sends to
  // another device's forward ops, and the copies it receives for its own ops. Each storage once.
  const graph::Graph& g = p.g();
  auto cpu = [&](DeviceId d) { return p.c().device(d).kind == "cpu"; };
  Holdings held;
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    const OpId producer = g.tensor(t).producer;
    if (!IsForward(g.op(producer))) continue;
    const DeviceId src = placement[producer];
    const graph::TensorId root = g.StorageOf(t);
    for (OpId c : g.Consumers(t)) {
      const DeviceId dst = placement[c];
      if (dst != src) {
        // The receiver holds a copy of the tensor itself (a view travels as its own bytes); the
        // sender keeps what it sent until its backward.
        held.emplace_back(dst, t, cpu(src));
        if (IsForward(g.op(c)) && root >= 0) held.emplace_back(src, root, cpu(src));
      } else if (!IsForward(g.op(c)) && root >= 0) {
        held.emplace_back(src, root, cpu(src));
      }
    }
  }
  return HeldBytes(p, std::move(held));
}

IdVector<DeviceId, double> HeldForWeightGradients(const Problem& p, const Placement& placement) {
  const graph::Graph& g = p.g();
  auto cpu = [&](DeviceId d) { return p.c().device(d).kind == "cpu"; };
  Holdings held;
  for (OpId op{0}; op < p.num_ops(); ++op) {
    const graph::Op& o = g.op(op);
    if (o.kind != graph::OpKind::kBackward || o.weight_gradient_share <= 0) continue;
    const DeviceId d = placement[op];
    for (graph::TensorId t : g.Inputs(op)) {
      const OpId producer = g.tensor(t).producer;
      if (IsForward(g.op(producer))) {
        const graph::TensorId root = g.StorageOf(t);
        if (root >= 0) held.emplace_back(d, root, cpu(placement[producer]));
      } else {
        held.emplace_back(d, t, cpu(placement[producer]));  // a gradient it reads
      }
    }
  }
  return HeldBytes(p, std::move(held));
}

IdVector<DeviceId, double> HeldWhenRecomputing(const Problem& p, const Placement& placement) {
  const graph::Graph& g = p.g();
  Holdings held;
  for (const graph::Edge& e : g.edges()) {
    const DeviceId src = placement[e.from], dst = placement[e.to];
    if (src == dst || !IsForward(g.op(e.from)) || !IsForward(g.op(e.to))) continue;
    const graph::TensorId t = g.FirstOutput(e.from) + e.output;
    const bool cpu = p.c().device(src).kind == "cpu";
    held.emplace_back(dst, t, cpu);
    // The sender keeps what it sent until its backward, as it does without recomputing.
    if (const graph::TensorId root = g.StorageOf(t); root >= 0) held.emplace_back(src, root, cpu);
  }
  return HeldBytes(p, std::move(held));
}

namespace {

// SimulatePipeline with the stages in pipeline order that recompute (`recomputing`, one flag a
// stage, or empty: none).
StatusOr<PipelineResult> SimulateWith(const Problem& p, const Placement& placement,
                                      PipelineSchedule schedule, int microbatches,
                                      const std::vector<char>& recomputing) {
  const graph::Graph& g = p.g();
  PipelineResult r;
  r.schedule = schedule;
  r.microbatches = microbatches;

  DPLACE_ASSIGN_OR_RETURN(const std::vector<DeviceId> stage_devices,
                          PipelineStageOrder(g, placement, p.num_devices()));
  const int num_stages = static_cast<int>(stage_devices.size());
  IdVector<DeviceId, int> stage_of(p.c().devices().size(), -1);
  for (int s = 0; s < num_stages; ++s) stage_of[stage_devices[static_cast<size_t>(s)]] = s;

  // Per-stage work and memory, and the transfer delay between (stage, phase) pairs.
  r.stages.resize(static_cast<size_t>(num_stages));
  std::vector<double> resident(static_cast<size_t>(num_stages), 0);
  bool training = false;
  for (OpId op{0}; op < p.num_ops(); ++op) {
    const DeviceId d = placement[op];
    PipelineStage& stage = r.stages[static_cast<size_t>(stage_of[d])];
    const graph::Op& o = g.op(op);
    const double seconds = p.costs.OpTime(op, d);
    (IsForward(o) ? stage.forward_s : stage.backward_s) += seconds;
    if (o.kind == graph::OpKind::kUpdate) stage.weight_s += seconds;
    if (o.kind == graph::OpKind::kBackward) stage.weight_s += o.weight_gradient_share * seconds;
    training = training || !IsForward(o);
    resident[static_cast<size_t>(stage_of[d])] += o.param_bytes + o.scratch_bytes;
  }
  const bool split = training && RowOf(schedule).splits_backward;
  const IdVector<DeviceId, double> per_microbatch =
      training ? HeldPerMicrobatch(p, placement)
               : ForwardOutputsPerDevice(g, placement, p.num_devices());
  const IdVector<DeviceId, double> for_weights =
      split ? HeldForWeightGradients(p, placement)
            : IdVector<DeviceId, double>(p.c().devices().size(), 0);
  const IdVector<DeviceId, double> inputs =
      training ? HeldWhenRecomputing(p, placement)
               : IdVector<DeviceId, double>(p.c().devices().size(), 0);
  for (int s = 0; s < num_stages && !recomputing.empty(); ++s) {
    r.stages[static_cast<size_t>(s)].recomputes = training && recomputing[static_cast<size_t>(s)];
  }
  // delay[(from stage, from phase, to stage, to phase)] = Σ transfer time of crossing tensors.
  std::map<std::tuple<int, int, int, int>, double> delay;
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    const OpId producer = g.tensor(t).producer;
    if (Replicable(g, producer)) continue;
    const DeviceId src = placement[producer];
    std::vector<std::pair<DeviceId, int>> seen;
    for (OpId c : g.Consumers(t)) {
      const DeviceId dst = placement[c];
      const int phase = Phase(g.op(c), split);
      if (dst == src || Replicable(g, c) ||
          std::find(seen.begin(), seen.end(), std::make_pair(dst, phase)) != seen.end())
        continue;
      seen.emplace_back(dst, phase);
      delay[{stage_of[src], Phase(g.op(producer), split), stage_of[dst], phase}] +=
          cost::TransferTime(g.tensor(t), p.c().LinkBetween(src, dst));
    }
  }

  // Tasks in per-stage order; a task starts when its stage is free and its inputs have arrived.
  // Tasks are settled in rounds: each round settles every stage's next task whose inputs are known.
  std::vector<std::vector<std::pair<int, bool>>> order(static_cast<size_t>(num_stages));
  for (int s = 0; s < num_stages; ++s)
    order[static_cast<size_t>(s)] = StageOrder(schedule, s, num_stages, microbatches, training);
  // (stage, micro-batch, phase) -> start and end times.
  std::map<std::tuple<int, int, int>, double> start, end;
  std::vector<size_t> next(static_cast<size_t>(num_stages), 0);
  std::vector<double> free_at(static_cast<size_t>(num_stages), 0);
  std::vector<std::deque<int>> waiting(static_cast<size_t>(num_stages));  // I done, W not
  size_t remaining = split ? static_cast<size_t>(num_stages * microbatches) : 0;
  for (const auto& o : order) remaining += o.size();
  // When stage s could start its task of micro-batch m in `phase`: null while an input is unknown.
  auto ready_at = [&](int s, int m, int phase) -> std::optional<double> {
    double ready = free_at[static_cast<size_t>(s)];
    if (phase > 0) {  // after the stage's own previous phase of m
      auto own = end.find({s, m, phase - 1});
      if (own == end.end()) return std::nullopt;
      ready = std::max(ready, own->second);
    }
    for (const auto& [edge, seconds] : delay) {
      const auto [from, from_phase, to, to_phase] = edge;
      if (to != s || to_phase != phase) continue;
      auto it = end.find({from, m, from_phase});
      if (it == end.end()) return std::nullopt;
      ready = std::max(ready, it->second + seconds);
    }
    return ready;
  };
  auto settle = [&](int s, int m, int phase, double at) {
    PipelineStage& stage = r.stages[static_cast<size_t>(s)];
    // A stage that recomputes runs its forward again before its backward.
    const double duration = phase == 0 ? stage.forward_s
                            : phase == 2
                                ? stage.weight_s
                                : (split ? stage.backward_s - stage.weight_s : stage.backward_s) +
                                      (stage.recomputes ? stage.forward_s : 0);
    start[{s, m, phase}] = at;
    end[{s, m, phase}] = at + duration;
    free_at[static_cast<size_t>(s)] = at + duration;
    stage.busy_s += duration;
    const TaskKind kind = phase == 0   ? TaskKind::kForward
                          : phase == 2 ? TaskKind::kWeight
                          : split      ? TaskKind::kInput
                                       : TaskKind::kBackward;
    r.tasks.push_back({stage_devices[static_cast<size_t>(s)], m, kind, at, at + duration});
    --remaining;
  };
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < num_stages; ++s) {
      auto& k = next[static_cast<size_t>(s)];
      auto& wait = waiting[static_cast<size_t>(s)];
      const bool more = k < order[static_cast<size_t>(s)].size();
      std::optional<double> main;
      if (more) {
        const auto [m, backward] = order[static_cast<size_t>(s)][k];
        main = ready_at(s, m, backward ? 1 : 0);
      }
      if (!wait.empty()) {
        // The oldest W: when too many wait, when nothing else is left, or in a gap it fits.
        const int m = wait.front();
        const std::optional<double> w = ready_at(s, m, 2);
        const bool due = wait.size() > WeightAllowance(schedule, s) || !more;
        if (w && (due || (main && *w + r.stages[static_cast<size_t>(s)].weight_s <= *main))) {
          settle(s, m, 2, *w);
          wait.pop_front();
          progress = true;
          continue;
        }
        if (due) continue;
      }
      if (!main) continue;
      const auto [m, backward] = order[static_cast<size_t>(s)][k];
      settle(s, m, backward ? 1 : 0, *main);
      if (backward && split) wait.push_back(m);
      ++k;
      progress = true;
    }
    if (!progress)
      return InvalidInput("the " + std::string(PipelineScheduleName(schedule)) +
                          " schedule deadlocks on this split (a stage waits for a later one)");
  }
  std::sort(r.tasks.begin(), r.tasks.end(),
            [](const PipelineTask& a, const PipelineTask& b) { return a.start_s < b.start_s; });
  for (const PipelineTask& t : r.tasks) r.makespan_s = std::max(r.makespan_s, t.end_s);
  r.time_per_microbatch_s = r.makespan_s / microbatches;
  double busy = 0;
  for (int s = 0; s < num_stages; ++s) {
    PipelineStage& stage = r.stages[static_cast<size_t>(s)];
    stage.device = stage_devices[static_cast<size_t>(s)];
    busy += stage.busy_s;
    stage.held_per_microbatch_bytes = per_microbatch[stage.device];
    stage.held_for_weight_bytes = for_weights[stage.device];
    stage.held_when_recomputing_bytes = inputs[stage.device];
    // A micro-batch is held from the start of F(m) to the end of B(m) (I(m); F(m) for inference):
    // in full, or, recomputing, its inputs, and in full again while B(m) (I(m)) recomputes and
    // runs; then what its weight gradients need until the end of W(m). The recorded instants,
    // not an end less its duration: a start that rounds below the end it waited for would count
    // one micro-batch too many.
    const double kept =
        stage.recomputes ? stage.held_when_recomputing_bytes : stage.held_per_microbatch_bytes;
    struct Change {
      double time;
      int microbatches;  // in flight
      double bytes;
    };
    std::vector<Change> changes;
    const int last = training ? 1 : 0;
    for (int m = 0; m < microbatches; ++m) {
      changes.push_back({start[{s, m, 0}], 1, kept});
      changes.push_back(
          {end[{s, m, last}], split ? 0 : -1, (split ? stage.held_for_weight_bytes : 0) - kept});
      if (split) changes.push_back({end[{s, m, 2}], -1, -stage.held_for_weight_bytes});
      if (stage.recomputes) {
        changes.push_back({start[{s, m, last}], 0, stage.held_per_microbatch_bytes});
        changes.push_back({end[{s, m, last}], 0, -stage.held_per_microbatch_bytes});
      }
    }
    std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
      return a.time != b.time ? a.time < b.time : a.bytes < b.bytes;  // frees first
    });
    int in_flight = 0;
    double bytes = 0, peak_held = 0;
    for (const Change& c : changes) {
      in_flight += c.microbatches;
      bytes += c.bytes;
      stage.peak_in_flight = std::max(stage.peak_in_flight, in_flight);
      peak_held = std::max(peak_held, bytes);
    }
    stage.peak_memory_bytes = resident[static_cast<size_t>(s)] + peak_held;
    stage.memory_capacity_bytes = p.c().device(stage.device).memory_bytes;
    if (r.feasible && stage.peak_memory_bytes > stage.memory_capacity_bytes) {
      r.feasible = false;
      r.reason =
          "device " + p.c().device(stage.device).name + ": peak memory " +
          FormatBytes(stage.peak_memory_bytes) + " with " + std::to_string(stage.peak_in_flight) +
          " micro-batches in flight exceeds capacity " + FormatBytes(stage.memory_capacity_bytes);
    }
  }
  r.bubble_fraction = r.makespan_s > 0 ? 1 - busy / (num_stages * r.makespan_s) : 0;
  return r;
}

}  // namespace

StatusOr<PipelineResult> SimulatePipeline(const Problem& p, const Placement& placement,
                                          PipelineSchedule schedule, int microbatches,
                                          Recompute recompute) {
  if (microbatches < 1) {
    return InvalidInput("a pipeline needs at least 1 micro-batch, not " +
                        std::to_string(microbatches));
  }
  if (recompute != Recompute::kAuto) {
    const std::vector<char> all(recompute == Recompute::kFull ? p.num_devices() : 0, 1);
    return SimulateWith(p, placement, schedule, microbatches, all);
  }
  // Auto: a stage recomputes only when it does not fit keeping everything (recomputing takes
  // time and never saves any). Which stages overflow can change as the others' times do: again
  // until none more does, at most once a stage.
  std::vector<char> recomputing(static_cast<size_t>(p.num_devices()), 0);
  while (true) {
    DPLACE_ASSIGN_OR_RETURN(PipelineResult r,
                            SimulateWith(p, placement, schedule, microbatches, recomputing));
    bool more = false;
    for (size_t s = 0; s < r.stages.size(); ++s) {
      const PipelineStage& stage = r.stages[s];
      if (!stage.recomputes && stage.peak_memory_bytes > stage.memory_capacity_bytes) {
        recomputing[s] = 1;
        more = true;
      }
    }
    if (!more) return r;
  }
}

StatusOr<PipelineResult> SimulateFastestSchedule(const Problem& problem, const Placement& placement,
                                                 int microbatches, Recompute recompute) {
  std::optional<PipelineResult> best;
  for (PipelineSchedule schedule :
       {PipelineSchedule::k1F1B, PipelineSchedule::kZBH1, PipelineSchedule::kZBH2}) {
    DPLACE_ASSIGN_OR_RETURN(
        PipelineResult r, SimulatePipeline(problem, placement, schedule, microbatches, recompute));
    if (!best || std::make_pair(!r.feasible, r.time_per_microbatch_s) <
                     std::make_pair(!best->feasible, best->time_per_microbatch_s)) {
      best = std::move(r);
    }
  }
  return *std::move(best);
}

StatusOr<PipelineResult> SimulateNamedSchedule(const Problem& problem, const Placement& placement,
                                               std::string_view name, int microbatches) {
  if (name == "auto") {
    return SimulateFastestSchedule(problem, placement, microbatches, problem.recompute);
  }
  const std::optional<PipelineSchedule> schedule = ParsePipelineSchedule(name);
  if (!schedule) {
    return InvalidInput("schedule: '" + std::string(name) + "' is not auto or a schedule (" +
                        PipelineScheduleNames() + ")");
  }
  return SimulatePipeline(problem, placement, *schedule, microbatches, problem.recompute);
}

StatusOr<PipelineResult> SimulateProblemPipeline(const Problem& problem,
                                                 const Placement& placement) {
  return problem.schedule_auto
             ? SimulateFastestSchedule(problem, placement, problem.microbatches, problem.recompute)
             : SimulatePipeline(problem, placement, problem.schedule, problem.microbatches,
                                problem.recompute);
}

Evaluation EvaluatePipeline(const Problem& problem, const Placement& placement) {
  auto run = SimulateProblemPipeline(problem, placement);
  if (!run.ok()) {
    Evaluation e = EvaluateMaxLoad(problem, placement);
    e.objective = Objective::kPipeline;
    e.feasible = false;
    e.reason = run.status().message();
    return e;
  }
  Evaluation e;
  e.objective = Objective::kPipeline;
  e.value = run->time_per_microbatch_s;
  e.devices.resize(problem.c().devices().size());
  for (DeviceId d : problem.c().device_ids()) {
    e.devices[d].memory_capacity_bytes = problem.c().device(d).memory_bytes;
  }
  for (OpId i{0}; i < problem.num_ops(); ++i) ++e.devices[placement[i]].ops;
  for (const PipelineStage& stage : run->stages) {
    DeviceReport& r = e.devices[stage.device];
    r.busy_s = r.load = stage.forward_s + stage.backward_s;
    r.peak_memory_bytes = stage.peak_memory_bytes;
  }
  e.reason = FindViolation(problem, placement);
  if (e.reason.empty()) e.reason = run->reason;
  e.feasible = e.reason.empty();
  return e;
}

}  // namespace dplace::sim
