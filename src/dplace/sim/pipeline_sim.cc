#include "dplace/sim/pipeline_sim.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "dplace/base/units.h"
#include "dplace/sim/constraints.h"
#include "dplace/sim/max_load.h"

namespace dplace::sim {

std::optional<PipelineSchedule> ParsePipelineSchedule(std::string_view name) {
  if (name == "gpipe") return PipelineSchedule::kGPipe;
  if (name == "1f1b") return PipelineSchedule::k1F1B;
  return std::nullopt;
}

std::string_view PipelineScheduleName(PipelineSchedule schedule) {
  return schedule == PipelineSchedule::kGPipe ? "gpipe" : "1f1b";
}

namespace {

bool IsForward(const graph::Op& op) { return op.kind == graph::OpKind::kForward; }

// The order in which stage `s` of `num_stages` runs its tasks: (micro-batch, backward?).
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
  const int warmup = std::min(num_stages - 1 - s, m);
  int next_f = 0, next_b = 0;
  for (; next_f < warmup; ++next_f) order.emplace_back(next_f, false);
  while (next_f < m) {
    order.emplace_back(next_f++, false);
    order.emplace_back(next_b++, true);
  }
  while (next_b < m) order.emplace_back(next_b++, true);
  return order;
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
  // (holder, tensor, whether sized as a CPU holds it)
  std::vector<std::tuple<DeviceId, graph::TensorId, bool>> held;
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
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  IdVector<DeviceId, double> bytes(p.c().devices().size(), 0);
  for (const auto& [d, t, on_cpu] : held) bytes[d] += g.tensor(t).BytesOn(on_cpu);
  return bytes;
}

StatusOr<PipelineResult> SimulatePipeline(const Problem& p, const Placement& placement,
                                          PipelineSchedule schedule, int microbatches) {
  if (microbatches < 1) {
    return InvalidInput("a pipeline needs at least 1 micro-batch, not " +
                        std::to_string(microbatches));
  }
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
    const auto s = static_cast<size_t>(stage_of[d]);
    const graph::Op& o = g.op(op);
    (IsForward(o) ? r.stages[s].forward_s : r.stages[s].backward_s) += p.costs.OpTime(op, d);
    training = training || !IsForward(o);
    resident[s] += o.param_bytes + o.scratch_bytes;
  }
  const IdVector<DeviceId, double> per_microbatch =
      training ? HeldPerMicrobatch(p, placement)
               : ForwardOutputsPerDevice(g, placement, p.num_devices());
  // delay[(from stage, from backward?, to stage, to backward?)] = Σ transfer time of crossing
  // tensors.
  std::map<std::tuple<int, bool, int, bool>, double> delay;
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    const OpId producer = g.tensor(t).producer;
    if (Replicable(g, producer)) continue;
    const DeviceId src = placement[producer];
    std::vector<std::pair<DeviceId, bool>> seen;
    for (OpId c : g.Consumers(t)) {
      const DeviceId dst = placement[c];
      const bool phase = !IsForward(g.op(c));
      if (dst == src || Replicable(g, c) ||
          std::find(seen.begin(), seen.end(), std::make_pair(dst, phase)) != seen.end())
        continue;
      seen.emplace_back(dst, phase);
      delay[{stage_of[src], !IsForward(g.op(producer)), stage_of[dst], phase}] +=
          cost::TransferTime(g.tensor(t), p.c().LinkBetween(src, dst));
    }
  }

  // Tasks in per-stage order; a task starts when its stage is free and its inputs have arrived.
  // Tasks are settled in rounds: each round settles every stage's next task whose inputs are known.
  std::vector<std::vector<std::pair<int, bool>>> order(static_cast<size_t>(num_stages));
  for (int s = 0; s < num_stages; ++s)
    order[static_cast<size_t>(s)] = StageOrder(schedule, s, num_stages, microbatches, training);
  // (stage, micro-batch, backward) -> start and end times.
  std::map<std::tuple<int, int, bool>, double> start, end;
  std::vector<size_t> next(static_cast<size_t>(num_stages), 0);
  std::vector<double> free_at(static_cast<size_t>(num_stages), 0);
  size_t remaining = 0;
  for (const auto& o : order) remaining += o.size();
  while (remaining > 0) {
    bool progress = false;
    for (int s = 0; s < num_stages; ++s) {
      auto& k = next[static_cast<size_t>(s)];
      if (k == order[static_cast<size_t>(s)].size()) continue;
      const auto [m, backward] = order[static_cast<size_t>(s)][k];
      double ready = free_at[static_cast<size_t>(s)];
      bool inputs_known = true;
      if (backward) {
        auto own = end.find({s, m, false});
        if (own == end.end())
          inputs_known = false;
        else
          ready = std::max(ready, own->second);
      }
      for (const auto& [edge, seconds] : delay) {
        const auto [from, from_backward, to, to_backward] = edge;
        if (to != s || to_backward != backward) continue;
        auto it = end.find({from, m, from_backward});
        if (it == end.end()) {
          inputs_known = false;
          break;
        }
        ready = std::max(ready, it->second + seconds);
      }
      if (!inputs_known) continue;
      PipelineStage& stage = r.stages[static_cast<size_t>(s)];
      const double duration = backward ? stage.backward_s : stage.forward_s;
      start[{s, m, backward}] = ready;
      end[{s, m, backward}] = ready + duration;
      free_at[static_cast<size_t>(s)] = ready + duration;
      stage.busy_s += duration;
      r.tasks.push_back(
          {stage_devices[static_cast<size_t>(s)], m, backward, ready, ready + duration});
      ++k;
      --remaining;
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
    // In flight: activations of m are held from the start of F(m) to the end of B(m) (or F(m)).
    std::vector<std::pair<double, int>> changes;
    for (int m = 0; m < microbatches; ++m) {
      // The recorded instants, not the end less the duration: a start that rounds below the end
      // it waited for would count one micro-batch too many.
      changes.emplace_back(start[{s, m, false}], 1);
      changes.emplace_back(end[{s, m, training}], -1);
    }
    std::sort(changes.begin(), changes.end(), [](const auto& a, const auto& b) {
      return a.first != b.first ? a.first < b.first : a.second < b.second;  // frees first
    });
    int current = 0;
    for (const auto& [time, delta] : changes) {
      current += delta;
      stage.peak_in_flight = std::max(stage.peak_in_flight, current);
    }
    stage.held_per_microbatch_bytes = per_microbatch[stage.device];
    stage.peak_memory_bytes =
        resident[static_cast<size_t>(s)] + stage.peak_in_flight * per_microbatch[stage.device];
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

PipelineSchedule ScheduleOf(const Problem& problem) {
  return problem.stage_memory == Problem::StageMemory::kGPipe ? PipelineSchedule::kGPipe
                                                              : PipelineSchedule::k1F1B;
}

Evaluation EvaluatePipeline(const Problem& problem, const Placement& placement) {
  auto run = SimulatePipeline(problem, placement, ScheduleOf(problem), problem.microbatches);
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
