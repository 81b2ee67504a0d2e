#include "dplace/sim/pipeline_sim.h"

#include <algorithm>
#include <map>
#include <optional>
#include <tuple>

#include "dplace/base/units.h"
#include "dplace/cost/collectives.h"
#include "dplace/graph/training.h"
#include "dplace/sched/timeline.h"
#include "dplace/sim/constraints.h"
#include "dplace/sim/max_load.h"

namespace dplace::sim {

namespace {

bool IsForward(const graph::Op& op) { return op.kind == graph::OpKind::kForward; }

// ceil(a / b) for positive b.
int CeilDiv(int a, int b) { return (a + b - 1) / b; }

// A task's phase: 0 forward, 1 backward or input gradients, 2 weight gradients (split only).
int Phase(const graph::Op& op, bool split) {
  if (op.kind == graph::OpKind::kForward) return 0;
  return split && op.kind == graph::OpKind::kUpdate ? 2 : 1;
}

// Inference: every forward output of the stage's ops, per micro-batch (what is alive at once is
// bounded by that).
std::vector<double> ForwardOutputsPerStage(const graph::Graph& g, const IdVector<OpId, int>& stage,
                                           size_t stages) {
  std::vector<double> bytes(stages, 0);
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    const OpId producer = g.tensor(t).producer;
    if (!g.tensor(t).view && IsForward(g.op(producer))) {
      bytes[static_cast<size_t>(stage[producer])] += g.tensor(t).bytes;
    }
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

// Every device a stage (stage i is device i, whether it holds ops or not): the per-device rules.
PipelineStages ByDevice(const Problem& p, const Placement& placement) {
  PipelineStages m;
  m.stage.resize(static_cast<size_t>(p.num_ops()));
  for (OpId op{0}; op < p.num_ops(); ++op) m.stage[op] = static_cast<int>(placement[op].index());
  for (DeviceId d : p.c().device_ids()) m.device.push_back(d);
  return m;
}

// Per device, the stage's values summed.
IdVector<DeviceId, double> SumByDevice(const Problem& p, const PipelineStages& m,
                                       const std::vector<double>& per_stage) {
  IdVector<DeviceId, double> out(p.c().devices().size(), 0);
  for (size_t s = 0; s < per_stage.size(); ++s) out[m.device[s]] += per_stage[s];
  return out;
}

// (holder stage, tensor, whether sized as a CPU holds it): what a stage holds, a tensor at a time.
using Holdings = std::vector<std::tuple<int, graph::TensorId, bool>>;

// Per stage, the bytes of what it holds, each (holder, tensor) once.
std::vector<double> HeldBytes(const Problem& p, size_t stages, Holdings held) {
  std::sort(held.begin(), held.end());
  held.erase(std::unique(held.begin(), held.end()), held.end());
  std::vector<double> bytes(stages, 0);
  for (const auto& [s, t, on_cpu] : held) {
    bytes[static_cast<size_t>(s)] += p.g().tensor(t).BytesOn(on_cpu);
  }
  return bytes;
}

// Per stage, HeldPerMicrobatch: what it keeps, sends and receives of one micro-batch; with
// `recomputed` (per op index), less what its backward keeps of those ops' outputs.
std::vector<double> HeldPerStage(const Problem& p, const Placement& placement,
                                 const PipelineStages& m,
                                 const std::vector<char>* recomputed = nullptr) {
  // Forward tensors (by their base) that a backward op of the stage keeps, those it sends to
  // another stage's forward ops, and the copies it receives for its own ops. Each storage once.
  const graph::Graph& g = p.g();
  auto cpu = [&](OpId op) { return p.c().device(placement[op]).kind == "cpu"; };
  Holdings held;
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    const OpId producer = g.tensor(t).producer;
    if (!IsForward(g.op(producer))) continue;
    const int src = m.stage[producer];
    const graph::TensorId root = g.StorageOf(t);
    for (OpId c : g.Consumers(t)) {
      const int dst = m.stage[c];
      if (dst != src) {
        // The receiver holds a copy of the tensor itself (a view travels as its own bytes); the
        // sender keeps what it sent until its backward.
        held.emplace_back(dst, t, cpu(producer));
        if (IsForward(g.op(c)) && root >= 0) held.emplace_back(src, root, cpu(producer));
      } else if (!IsForward(g.op(c)) && root >= 0 &&
                 (recomputed == nullptr || !(*recomputed)[producer.index()])) {
        held.emplace_back(src, root, cpu(producer));
      }
    }
  }
  return HeldBytes(p, m.device.size(), std::move(held));
}

// Per stage, HeldForWeightGradients.
std::vector<double> HeldForWeightsPerStage(const Problem& p, const Placement& placement,
                                           const PipelineStages& m) {
  const graph::Graph& g = p.g();
  auto cpu = [&](OpId op) { return p.c().device(placement[op]).kind == "cpu"; };
  Holdings held;
  for (OpId op{0}; op < p.num_ops(); ++op) {
    const graph::Op& o = g.op(op);
    if (o.kind != graph::OpKind::kBackward || o.weight_gradient_share <= 0) continue;
    for (graph::TensorId t : g.Inputs(op)) {
      const OpId producer = g.tensor(t).producer;
      if (IsForward(g.op(producer))) {
        const graph::TensorId root = g.StorageOf(t);
        if (root >= 0) held.emplace_back(m.stage[op], root, cpu(producer));
      } else {
        held.emplace_back(m.stage[op], t, cpu(producer));  // a gradient it reads
      }
    }
  }
  return HeldBytes(p, m.device.size(), std::move(held));
}

// Per stage, HeldWhenRecomputing.
std::vector<double> HeldRecomputingPerStage(const Problem& p, const Placement& placement,
                                            const PipelineStages& m) {
  const graph::Graph& g = p.g();
  Holdings held;
  for (const graph::Edge& e : g.edges()) {
    const int src = m.stage[e.from], dst = m.stage[e.to];
    if (src == dst || !IsForward(g.op(e.from)) || !IsForward(g.op(e.to))) continue;
    const graph::TensorId t = g.FirstOutput(e.from) + e.output;
    const bool cpu = p.c().device(placement[e.from]).kind == "cpu";
    held.emplace_back(dst, t, cpu);
    // The sender keeps what it sent until its backward, as it does without recomputing.
    if (const graph::TensorId root = g.StorageOf(t); root >= 0) held.emplace_back(src, root, cpu);
  }
  return HeldBytes(p, m.device.size(), std::move(held));
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
  const PipelineStages m = ByDevice(p, placement);
  return SumByDevice(p, m, HeldPerStage(p, placement, m));
}

IdVector<DeviceId, double> HeldSelectivePerMicrobatch(const Problem& p,
                                                      const Placement& placement) {
  const PipelineStages m = ByDevice(p, placement);
  const std::vector<char> core = graph::AttentionCoreOps(p.g());
  return SumByDevice(p, m, HeldPerStage(p, placement, m, &core));
}

IdVector<DeviceId, double> HeldForWeightGradients(const Problem& p, const Placement& placement) {
  const PipelineStages m = ByDevice(p, placement);
  return SumByDevice(p, m, HeldForWeightsPerStage(p, placement, m));
}

IdVector<DeviceId, double> HeldWhenRecomputing(const Problem& p, const Placement& placement) {
  const PipelineStages m = ByDevice(p, placement);
  return SumByDevice(p, m, HeldRecomputingPerStage(p, placement, m));
}

namespace {

// The stages of `placement` under a schedule that runs one a device: its devices in pipeline
// order (PipelineStageOrder).
StatusOr<PipelineStages> DeviceStages(const Problem& p, const Placement& placement) {
  PipelineStages m;
  DPLACE_ASSIGN_OR_RETURN(m.device, PipelineStageOrder(p.g(), placement, p.num_devices()));
  IdVector<DeviceId, int> index(p.c().devices().size(), -1);
  for (size_t s = 0; s < m.device.size(); ++s) index[m.device[s]] = static_cast<int>(s);
  m.stage.resize(static_cast<size_t>(p.num_ops()));
  for (OpId op{0}; op < p.num_ops(); ++op) m.stage[op] = index[placement[op]];
  return m;
}

// The stages of `placement` under an interleaved schedule: its chunks, the stage of each forward
// op the chunk of its device it runs in (chunk c of the device at position r of the ring is stage
// c * S + r). Counting the device changes on the paths through each op (Replicable ops apart),
// `lo` is the most on a path from the graph's inputs to it and D the most on any path; an op with
// D - lo changes on a path from it to the outputs lies on a longest path and pins its device's
// position in the ring (its stage mod S). Every forward op then takes the first stage of its
// device at or after `lo` and after what it reads (the same stage on the same device), in
// topological order, and one that depends on no op's output as late as what reads it allows; each
// device runs ceil((D + 1) / S) chunks (its last may be empty). InvalidInput when a device has no
// pinned op or two positions, an op would need a stage past the last, or a device holds no forward
// op. Backward and update ops: see below.
StatusOr<PipelineStages> ChunkStages(const Problem& p, const Placement& placement) {
  const graph::Graph& g = p.g();
  const auto& topo = g.TopologicalOrder();
  const size_t n = static_cast<size_t>(p.num_ops());
  auto counted = [&](OpId op) { return IsForward(g.op(op)) && !Replicable(g, op); };
  IdVector<OpId, int> lo(n, -1), to_end(n, -1);
  int longest = 0;
  for (OpId op : topo) {
    if (!counted(op)) continue;
    lo[op] = 0;
    for (OpId pred : g.Predecessors(op)) {
      if (lo[pred] >= 0) lo[op] = std::max(lo[op], lo[pred] + (placement[pred] != placement[op]));
    }
    longest = std::max(longest, lo[op]);
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    if (!counted(*it)) continue;
    to_end[*it] = 0;
    for (OpId c : g.Successors(*it)) {
      if (to_end[c] >= 0) {
        to_end[*it] = std::max(to_end[*it], to_end[c] + (placement[c] != placement[*it]));
      }
    }
  }
  // The ring: the devices with forward work, each at the position its pinned ops say.
  std::map<DeviceId, int> position;
  std::vector<DeviceId> devices;
  for (OpId op : topo) {
    if (counted(op) && std::find(devices.begin(), devices.end(), placement[op]) == devices.end())
      devices.push_back(placement[op]);
  }
  const int ring = static_cast<int>(devices.size());
  auto refuse = [&](const std::string& why) {
    return InvalidInput(
        "the interleaved schedule runs chunk k of the pipeline on device k mod S (round robin), "
        "and this plan's chunks on " +
        std::to_string(ring) + " devices do not go round: " + why +
        " (plan with place --schedule interleaved:V)");
  };
  if (ring == 0) return InvalidInput("the plan has no forward work to pipeline");
  for (OpId op : topo) {
    if (!counted(op) || lo[op] + to_end[op] != longest) continue;
    auto [at, added] = position.try_emplace(placement[op], lo[op] % ring);
    if (!added && at->second != lo[op] % ring) {
      return refuse("device " + p.c().device(placement[op]).name + " holds stages " +
                    std::to_string(at->second) + " and " + std::to_string(lo[op]) + " mod " +
                    std::to_string(ring));
    }
  }
  // As many chunks a device as the longest path needs: the last ones may be empty.
  PipelineStages m;
  m.chunks = (longest + ring) / ring;
  const int last = m.chunks * ring - 1;
  m.device.assign(static_cast<size_t>(last) + 1, DeviceId(0));
  for (DeviceId d : devices) {
    if (!position.count(d)) {
      return refuse("device " + p.c().device(d).name + " is on no longest path");
    }
    for (int k = position[d]; k <= last; k += ring) m.device[static_cast<size_t>(k)] = d;
  }
  std::vector<char> taken(static_cast<size_t>(ring), 0);
  for (const auto& [d, r] : position) {
    if (taken[static_cast<size_t>(r)]++)
      return refuse("two devices hold stage " + std::to_string(r));
  }
  m.stage.assign(n, -1);
  for (OpId op : topo) {
    if (!counted(op)) continue;
    int first = lo[op];
    for (OpId pred : g.Predecessors(op)) {
      if (m.stage[pred] >= 0 && counted(pred)) {
        first = std::max(first, m.stage[pred] + (placement[pred] != placement[op]));
      }
    }
    const int r = position[placement[op]];
    const int stage = first + ((r - first) % ring + ring) % ring;
    if (stage > last) return refuse("op " + g.op(op).name + " would run after the last stage");
    m.stage[op] = stage;
  }
  // An op that reads no other op's output, nor anything such an op does not make (a weight's
  // transpose, a position table), waits for nothing: it runs in the last stage of its device
  // before every op that reads it (one on another device: before that one's stage).
  IdVector<OpId, char> floating(n, 0);
  for (OpId op : topo) {
    if (!counted(op)) continue;
    floating[op] = 1;
    for (OpId pred : g.Predecessors(op)) {
      if (counted(pred) && !floating[pred]) floating[op] = 0;
    }
  }
  for (auto it = topo.rbegin(); it != topo.rend(); ++it) {
    if (!floating[*it]) continue;
    int cap = last + 1;
    for (OpId c : g.Successors(*it)) {
      if (counted(c)) cap = std::min(cap, m.stage[c] - (placement[c] != placement[*it]));
    }
    const int r = position[placement[*it]];
    if (cap <= last && cap >= r) m.stage[*it] = std::max(m.stage[*it], r + (cap - r) / ring * ring);
  }
  // The rest in topological order: an op that reads nothing and computes nothing with the first
  // chunk on its device that reads it; a backward or update op in the last stage of its device no
  // later than what it reads of the backward (a stage before one on another device). With each
  // backward op on its forward op's device that is never before its forward op's stage, so the
  // backward runs through the stages in reverse as the schedule runs them.
  for (OpId op : topo) {
    if (m.stage[op] >= 0) continue;
    const DeviceId d = placement[op];
    if (!position.count(d)) {
      return InvalidInput(
          "the interleaved schedule needs forward work on every device of the "
          "pipeline, and device " +
          p.c().device(d).name + " has none");
    }
    if (IsForward(g.op(op))) {
      for (OpId c : g.Successors(op)) {
        if (placement[c] == d && counted(c) && (m.stage[op] < 0 || m.stage[c] < m.stage[op])) {
          m.stage[op] = m.stage[c];
        }
      }
      if (m.stage[op] < 0) m.stage[op] = position[d];
      continue;
    }
    int want = last;
    for (OpId pred : g.Predecessors(op)) {
      if (!IsForward(g.op(pred))) want = std::min(want, m.stage[pred] - (placement[pred] != d));
    }
    // The last stage of d at or before `want` (its first when none is: the schedule then
    // deadlocks, and says so).
    const int r = position[d];
    m.stage[op] = want < r ? r : r + (want - r) / ring * ring;
  }
  return m;
}

}  // namespace

StatusOr<PipelineStages> StagesOf(const Problem& p, const Placement& placement, bool interleaved) {
  auto by_device = DeviceStages(p, placement);
  if (by_device.ok() || !interleaved) return by_device;
  return ChunkStages(p, placement);
}

namespace {

// delay[(from stage, from phase, to stage, to phase)]: the transfer time of the tensors crossing
// from one (stage, phase) to another, summed (a tensor counted once for each consumer stage and
// phase).
using Delays = std::map<std::tuple<int, int, int, int>, double>;
Delays TransferDelays(const Problem& p, const Placement& placement,
                      const IdVector<OpId, int>& stage_of, bool split) {
  const graph::Graph& g = p.g();
  Delays delay;
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    const OpId producer = g.tensor(t).producer;
    if (Replicable(g, producer)) continue;
    const int src = stage_of[producer];
    std::vector<std::pair<int, int>> seen;
    for (OpId c : g.Consumers(t)) {
      const int dst = stage_of[c];
      const int phase = Phase(g.op(c), split);
      if (dst == src || Replicable(g, c) ||
          std::find(seen.begin(), seen.end(), std::make_pair(dst, phase)) != seen.end())
        continue;
      seen.emplace_back(dst, phase);
      delay[{src, Phase(g.op(producer), split), dst, phase}] +=
          cost::TransferTime(g.tensor(t), p.c().LinkBetween(placement[producer], placement[c]));
    }
  }
  return delay;
}

// Each lane's tasks in order, (stage, micro-batch, backward?), and the weight-gradient tasks it
// lets wait: lane k runs a replica of PipelineStage lane_stage[k], of replicas[that] copies whose
// first lane is first_lane[that]; under an interleaved schedule (chunks > 1) its chunks' tasks as
// sched::InterleavedOrder gives them, else its stage's as StageOrder does.
struct LaneOrders {
  std::vector<std::vector<std::tuple<int, int, bool>>> order;
  std::vector<size_t> allowance;
};
LaneOrders OrdersOf(const ScheduleRow& row, const std::vector<int>& lane_stage,
                    const std::vector<int>& replicas, const std::vector<int>& first_lane,
                    int num_devices, int chunks, int microbatches, bool training) {
  const int num_lanes = static_cast<int>(lane_stage.size());
  LaneOrders out;
  out.order.resize(static_cast<size_t>(num_lanes));
  out.allowance.resize(static_cast<size_t>(num_lanes));
  for (int lane = 0; lane < num_lanes; ++lane) {
    auto& o = out.order[static_cast<size_t>(lane)];
    const int d = lane_stage[static_cast<size_t>(lane)];
    const int copies = replicas[static_cast<size_t>(d)], replica = lane - first_lane[d];
    // The replicas of this stage and of those before and after it, in its own micro-batches.
    const int before = CeilDiv(first_lane[d], copies);
    const int after = CeilDiv(num_lanes - first_lane[d], copies) - 1;
    out.allowance[static_cast<size_t>(lane)] = WeightAllowance(row, before);
    if (chunks > 1) {  // inference: every chunk's forwards, in the same groups
      for (const sched::Task& t : sched::InterleavedOrder(d, num_devices, chunks, microbatches)) {
        if (training || !t.backward)
          o.emplace_back(t.chunk * num_devices + d, t.microbatch, t.backward);
      }
    } else {
      const ScheduleRow& each = row.interleaves ? RowOf(PipelineSchedule::k1F1B) : row;
      for (const auto& [i, backward] : StageOrder(each, after, microbatches / copies, training)) {
        o.emplace_back(d, replica + i * copies, backward);
      }
    }
  }
  return out;
}

// A replicated stage all-reduces its weight gradients (a ring over its replicas) once its last
// task ends; the step ends with the last all-reduce. Stage st runs on PipelineStage st mod
// num_devices.
void AllReduceReplicas(const Problem& p, const PipelineStages& map, int num_devices,
                       const std::vector<int>& replicas, PipelineResult* r) {
  const graph::Graph& g = p.g();
  auto device_of = [&](int stage) { return stage % num_devices; };
  std::vector<double> gradient_bytes(static_cast<size_t>(num_devices), 0);
  for (OpId op{0}; op < p.num_ops(); ++op) {
    if (g.op(op).kind == graph::OpKind::kBackward) {
      gradient_bytes[static_cast<size_t>(device_of(map.stage[op]))] += g.op(op).param_bytes;
    }
  }
  for (int d = 0; d < num_devices; ++d) {
    PipelineStage& stage = r->stages[static_cast<size_t>(d)];
    stage.replicas = replicas[static_cast<size_t>(d)];
    if (stage.replicas < 2 || gradient_bytes[static_cast<size_t>(d)] <= 0) continue;
    const hw::Link& link = p.c().device(stage.device).replica_link;
    stage.allreduce_s =
        cost::RingAllReduceTime(gradient_bytes[static_cast<size_t>(d)], stage.replicas, link);
    double last = 0;
    for (const PipelineTask& t : r->tasks) {
      if (t.device == stage.device) last = std::max(last, t.end_s);
    }
    r->makespan_s = std::max(r->makespan_s, last + stage.allreduce_s);
  }
}

// SimulatePipeline with what each device recomputes (`recomputing`, by device id; empty: none).
// What a stage would keep recomputing is worked out only where `asked` (the run's mode) may
// recompute so: the pipeline objective's every evaluation keeping everything does none of it.
StatusOr<PipelineResult> SimulateWith(const Problem& p, const Placement& placement,
                                      PipelineSchedule schedule, int microbatches,
                                      const std::vector<Recompute>& recomputing, Recompute asked) {
  const graph::Graph& g = p.g();
  PipelineResult r;
  r.schedule = schedule;
  r.microbatches = microbatches;

  DPLACE_ASSIGN_OR_RETURN(const PipelineStages map,
                          StagesOf(p, placement, RowOf(schedule).interleaves));
  const int chunks = map.chunks;
  // Stages (chunks under an interleaved schedule, one a device otherwise) in pipeline order; the
  // devices, one PipelineStage each, in the order of their first stage.
  const int num_stages = static_cast<int>(map.device.size());
  const int num_devices = num_stages / chunks;
  if (chunks > 1 && microbatches % num_devices != 0) {
    return InvalidInput("the interleaved schedule runs micro-batches in groups of the pipeline's " +
                        std::to_string(num_devices) + " devices, and " +
                        std::to_string(microbatches) + " is not a multiple");
  }
  r.virtual_stages = chunks;
  auto device_of = [&](int stage) { return stage % num_devices; };  // its PipelineStage
  // A stage on a device of several replicas (hw::Device::replicas) runs micro-batch m on replica
  // m mod replicas: each replica is a lane, with its own tasks, order and memory.
  std::vector<int> replicas(static_cast<size_t>(num_devices)), first_lane(1, 0);
  for (int ds = 0; ds < num_devices; ++ds) {
    const hw::Device& device = p.c().device(map.device[static_cast<size_t>(ds)]);
    const int n = replicas[static_cast<size_t>(ds)] = device.replicas;
    if (n > 1 && chunks > 1) {
      return InvalidInput("the interleaved schedule runs one replica a stage, and " + device.name +
                          " is " + std::to_string(n));
    }
    if (microbatches % n != 0) {
      return InvalidInput(device.name + " runs micro-batches on its " + std::to_string(n) +
                          " replicas in turn, and " + std::to_string(microbatches) +
                          " is not a multiple");
    }
    first_lane.push_back(first_lane.back() + n);
  }
  const int num_lanes = first_lane.back();
  std::vector<int> lane_stage;  // the PipelineStage of each lane
  for (int ds = 0; ds < num_devices; ++ds) {
    lane_stage.insert(lane_stage.end(), static_cast<size_t>(replicas[static_cast<size_t>(ds)]), ds);
  }

  // Per-stage work and memory, and the transfer delay between (stage, phase) pairs.
  r.stages.resize(static_cast<size_t>(num_devices));
  struct Work {
    double forward_s = 0, backward_s = 0, weight_s = 0;
    double core_s = 0;  // forward time of attention's core (selective recomputation)
  };
  const bool may_full = asked == Recompute::kFull || asked == Recompute::kAuto;
  const bool may_select = asked == Recompute::kSelective || asked == Recompute::kAuto;
  const std::vector<char> core = may_select
                                     ? graph::AttentionCoreOps(g)
                                     : std::vector<char>(static_cast<size_t>(p.num_ops()), 0);
  std::vector<Work> work(static_cast<size_t>(num_stages));
  std::vector<double> resident(static_cast<size_t>(num_devices), 0);
  bool training = false;
  for (OpId op{0}; op < p.num_ops(); ++op) {
    const int st = map.stage[op];
    Work& w = work[static_cast<size_t>(st)];
    const graph::Op& o = g.op(op);
    const double seconds = p.costs.OpTime(op, placement[op]);
    (IsForward(o) ? w.forward_s : w.backward_s) += seconds;
    if (core[op.index()]) w.core_s += seconds;
    if (o.kind == graph::OpKind::kUpdate) w.weight_s += seconds;
    if (o.kind == graph::OpKind::kBackward) w.weight_s += o.weight_gradient_share * seconds;
    training = training || !IsForward(o);
    resident[static_cast<size_t>(device_of(st))] += o.param_bytes + o.scratch_bytes;
  }
  for (int st = 0; st < num_stages; ++st) {
    PipelineStage& stage = r.stages[static_cast<size_t>(device_of(st))];
    stage.device = map.device[static_cast<size_t>(st)];
    stage.forward_s += work[static_cast<size_t>(st)].forward_s;
    stage.backward_s += work[static_cast<size_t>(st)].backward_s;
    stage.weight_s += work[static_cast<size_t>(st)].weight_s;
  }
  const bool split = training && RowOf(schedule).splits_backward;
  const size_t n = static_cast<size_t>(num_stages);
  const std::vector<double> per_microbatch =
      training ? HeldPerStage(p, placement, map) : ForwardOutputsPerStage(g, map.stage, n);
  const std::vector<double> for_weights =
      split ? HeldForWeightsPerStage(p, placement, map) : std::vector<double>(n, 0);
  const std::vector<double> inputs =
      training && may_full ? HeldRecomputingPerStage(p, placement, map) : std::vector<double>(n, 0);
  const std::vector<double> selective =
      training && may_select ? HeldPerStage(p, placement, map, &core) : per_microbatch;
  for (PipelineStage& stage : r.stages) {
    stage.recompute =
        training && !recomputing.empty() ? recomputing[stage.device.index()] : Recompute::kNone;
    stage.recomputes = stage.recompute != Recompute::kNone;
  }
  for (int st = 0; st < num_stages; ++st) {
    PipelineStage& stage = r.stages[static_cast<size_t>(device_of(st))];
    stage.held_per_microbatch_bytes += per_microbatch[static_cast<size_t>(st)];
    stage.held_for_weight_bytes += for_weights[static_cast<size_t>(st)];
    stage.held_when_recomputing_bytes += inputs[static_cast<size_t>(st)];
    stage.held_selective_bytes += selective[static_cast<size_t>(st)];
  }
  // The tasks on the one simulator of pipeline schedules: per stage its phases' times and the
  // transfers it waits for, per lane (a replica of a stage's device) its order.
  using sched::Phase;
  sched::Pipeline pipe(num_stages, num_lanes, microbatches);
  for (int st = 0; st < num_stages; ++st) {
    const Work& w = work[static_cast<size_t>(st)];
    const PipelineStage& stage = r.stages[static_cast<size_t>(device_of(st))];
    // A stage that recomputes runs its forward (or attention's core) again before its backward.
    const double again = stage.recompute == Recompute::kFull        ? w.forward_s
                         : stage.recompute == Recompute::kSelective ? w.core_s
                                                                    : 0;
    pipe.SetSeconds(st, Phase::kForward, w.forward_s);
    pipe.SetSeconds(st, Phase::kBackward,
                    (split ? w.backward_s - w.weight_s : w.backward_s) + again);
    pipe.SetSeconds(st, Phase::kWeight, w.weight_s);
    const size_t ds = static_cast<size_t>(device_of(st));
    pipe.SetLanes(st, first_lane[ds], replicas[ds]);
  }
  for (const auto& [edge, seconds] : TransferDelays(p, placement, map.stage, split)) {
    const auto [from, from_phase, to, to_phase] = edge;
    pipe.AddInput(to, static_cast<Phase>(to_phase),
                  {from, static_cast<Phase>(from_phase), seconds});
  }
  LaneOrders lanes = OrdersOf(RowOf(schedule), lane_stage, replicas, first_lane, num_devices,
                              chunks, microbatches, training);
  for (int lane = 0; lane < num_lanes; ++lane) {
    std::vector<sched::LaneTask> order;
    for (const auto& [st, m, backward] : lanes.order[static_cast<size_t>(lane)]) {
      order.push_back({st, m, backward ? Phase::kBackward : Phase::kForward});
    }
    pipe.SetOrder(lane, std::move(order));
    if (split) pipe.DeferWeights(lane, lanes.allowance[static_cast<size_t>(lane)]);
  }
  const std::optional<sched::Timeline> run = sched::Timeline::Run(pipe);
  if (!run) {
    return InvalidInput("the " + std::string(sched::ScheduleName(schedule)) +
                        " schedule deadlocks on this split (a stage waits for a later one)");
  }
  for (const sched::LaneTask& t : run->tasks()) {
    PipelineStage& stage = r.stages[static_cast<size_t>(device_of(t.stage))];
    const double begin = run->Start(t.stage, t.microbatch, t.phase);
    const double end = run->End(t.stage, t.microbatch, t.phase);
    stage.busy_s += end - begin;
    const TaskKind kind = t.phase == Phase::kForward  ? TaskKind::kForward
                          : t.phase == Phase::kWeight ? TaskKind::kWeight
                          : split                     ? TaskKind::kInput
                                                      : TaskKind::kBackward;
    r.tasks.push_back({stage.device, t.stage, t.microbatch, kind, begin, end,
                       t.microbatch % replicas[static_cast<size_t>(device_of(t.stage))]});
  }
  std::stable_sort(
      r.tasks.begin(), r.tasks.end(),
      [](const PipelineTask& a, const PipelineTask& b) { return a.start_s < b.start_s; });
  for (const PipelineTask& t : r.tasks) r.makespan_s = std::max(r.makespan_s, t.end_s);
  AllReduceReplicas(p, map, num_devices, replicas, &r);
  r.time_per_microbatch_s = r.makespan_s / microbatches;
  double busy = 0;
  for (int lane = 0; lane < num_lanes; ++lane) {
    const int d = lane_stage[static_cast<size_t>(lane)];
    const int copies = replicas[static_cast<size_t>(d)], replica = lane - first_lane[d];
    PipelineStage& stage = r.stages[static_cast<size_t>(d)];
    if (replica == 0) busy += stage.busy_s;
    // A micro-batch is held from the start of F(m) to the end of B(m) (I(m); F(m) for inference),
    // per chunk: in full, or, recomputing, its inputs and outputs, and in full again while B(m)
    // (I(m)) recomputes and runs; then what its weight gradients need until the end of W(m). The
    // recorded instants, not an end less its duration: a start that rounds below the end it
    // waited for would count one micro-batch too many.
    struct Change {
      double time;
      int microbatches;  // in flight
      double bytes;
    };
    std::vector<Change> changes;
    const Phase last = training ? Phase::kBackward : Phase::kForward;
    for (int st = d; st < num_stages; st += num_devices) {
      const size_t i = static_cast<size_t>(st);
      // What it keeps of a micro-batch, and what it makes again while the backward runs.
      const double kept = stage.recompute == Recompute::kFull        ? inputs[i]
                          : stage.recompute == Recompute::kSelective ? selective[i]
                                                                     : per_microbatch[i];
      const double again =
          stage.recompute == Recompute::kFull ? per_microbatch[i] : per_microbatch[i] - kept;
      for (int m = replica; m < microbatches; m += copies) {
        changes.push_back({run->Start(st, m, Phase::kForward), 1, kept});
        changes.push_back(
            {run->End(st, m, last), split ? 0 : -1, (split ? for_weights[i] : 0) - kept});
        if (split) changes.push_back({run->End(st, m, Phase::kWeight), -1, -for_weights[i]});
        if (stage.recomputes) {
          changes.push_back({run->Start(st, m, last), 0, again});
          changes.push_back({run->End(st, m, last), 0, -again});
        }
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
    stage.peak_memory_bytes =
        std::max(stage.peak_memory_bytes, resident[static_cast<size_t>(d)] + peak_held);
    stage.memory_capacity_bytes = p.c().device(stage.device).memory_bytes;
    if (r.feasible && stage.peak_memory_bytes > stage.memory_capacity_bytes) {
      r.feasible = false;
      r.reason =
          "device " + p.c().device(stage.device).name + ": peak memory " +
          FormatBytes(stage.peak_memory_bytes) + " with " + std::to_string(stage.peak_in_flight) +
          " micro-batches in flight exceeds capacity " + FormatBytes(stage.memory_capacity_bytes);
    }
  }
  r.bubble_fraction = r.makespan_s > 0 ? 1 - busy / (num_lanes * r.makespan_s) : 0;
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
    const std::vector<Recompute> all(static_cast<size_t>(p.num_devices()), recompute);
    return SimulateWith(p, placement, schedule, microbatches, all, recompute);
  }
  // Auto: a stage recomputes only when it does not fit keeping everything (recomputing takes
  // time and never saves any): attention's core first where that frees anything, then its whole
  // forward. Which stages overflow can change as the others' times do: again until none more
  // does, at most twice a stage.
  std::vector<Recompute> recomputing(static_cast<size_t>(p.num_devices()), Recompute::kNone);
  while (true) {
    DPLACE_ASSIGN_OR_RETURN(PipelineResult r, SimulateWith(p, placement, schedule, microbatches,
                                                           recomputing, Recompute::kAuto));
    bool more = false;
    for (const PipelineStage& stage : r.stages) {
      if (stage.recompute == Recompute::kFull ||
          stage.peak_memory_bytes <= stage.memory_capacity_bytes) {
        continue;
      }
      Recompute& mine = recomputing[stage.device.index()];
      mine =
          mine == Recompute::kNone && stage.held_selective_bytes < stage.held_per_microbatch_bytes
              ? Recompute::kSelective
              : Recompute::kFull;
      more = true;
    }
    if (!more) return r;
  }
}

StatusOr<PipelineResult> SimulateFastestSchedule(const Problem& problem, const Placement& placement,
                                                 int microbatches, Recompute recompute) {
  // A plan of one stage a device runs the others (interleaved would run it as 1F1B); a plan of
  // chunks runs interleaved only, and when it does not, the plain error says why.
  auto stages = PipelineStageOrder(problem.g(), placement, problem.num_devices());
  if (!stages.ok()) {
    auto r = SimulatePipeline(problem, placement, PipelineSchedule::kInterleaved, microbatches,
                              recompute);
    if (!r.ok()) return stages.status();
    return r;
  }
  std::optional<PipelineResult> best;
  for (PipelineSchedule schedule :
       {PipelineSchedule::k1F1B, PipelineSchedule::kZbH1, PipelineSchedule::kZbH2}) {
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
  const std::optional<PipelineSchedule> schedule = sched::ScheduleNamed(name);
  if (!schedule) {
    return InvalidInput("schedule: '" + std::string(name) + "' is not auto or a schedule (" +
                        sched::ScheduleNames() + ")");
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
