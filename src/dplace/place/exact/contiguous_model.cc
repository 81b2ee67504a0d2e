#include "dplace/place/exact/contiguous_model.h"

#include <algorithm>
#include <numeric>
#include <queue>
#include <set>
#include <utility>

#include "dplace/graph/training.h"
#include "dplace/sim/constraints.h"

namespace dplace::place {
namespace {

using graph::OpKind;

class UnionFind {
 public:
  explicit UnionFind(int n) : parent_(static_cast<size_t>(n)) {
    std::iota(parent_.begin(), parent_.end(), 0);
  }
  int Find(int x) {
    while (parent_[static_cast<size_t>(x)] != x) {
      parent_[static_cast<size_t>(x)] =
          parent_[static_cast<size_t>(parent_[static_cast<size_t>(x)])];
      x = parent_[static_cast<size_t>(x)];
    }
    return x;
  }
  void Union(int a, int b) { parent_[static_cast<size_t>(Find(a))] = Find(b); }

 private:
  std::vector<int> parent_;
};

struct OpEdge {
  sim::OpId from, to;
};

// Units of the current classes: dense unit index per op, and the unit-level forward edges (true
// edges between forward ops, and the artificial mirror edges), each list deduplicated.
struct Units {
  int count = 0;
  sim::PerOp<int> of_op;
  std::set<std::pair<int, int>> true_edges, artificial_edges;
};

Units MakeUnits(const sim::Problem& p, UnionFind& classes, const sim::PerOp<int>& class_of_op,
                const std::vector<OpEdge>& edges, const std::vector<OpEdge>& mirror) {
  Units u;
  std::vector<int> unit_of_class(class_of_op.size() + p.g().groups().size() + 1, -1);
  u.of_op.resize(p.g().ops().size());
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    const int c = classes.Find(class_of_op[op]);
    if (unit_of_class[static_cast<size_t>(c)] < 0)
      unit_of_class[static_cast<size_t>(c)] = u.count++;
    u.of_op[op] = unit_of_class[static_cast<size_t>(c)];
  }
  for (const OpEdge& e : edges) {
    if (p.g().op(e.from).kind != OpKind::kForward || p.g().op(e.to).kind != OpKind::kForward)
      continue;
    const int a = u.of_op[e.from], b = u.of_op[e.to];
    if (a != b) u.true_edges.emplace(a, b);
  }
  for (const OpEdge& e : mirror) {
    const int a = u.of_op[e.from], b = u.of_op[e.to];
    if (a != b) u.artificial_edges.emplace(a, b);
  }
  return u;
}

// Strongly connected components of the unit graph (Tarjan, iterative); returns component per unit.
std::vector<int> Components(const Units& u) {
  std::vector<std::vector<int>> adj(static_cast<size_t>(u.count));
  for (const auto* edges : {&u.true_edges, &u.artificial_edges}) {
    for (const auto& [a, b] : *edges) adj[static_cast<size_t>(a)].push_back(b);
  }
  std::vector<int> index(static_cast<size_t>(u.count), -1), low(static_cast<size_t>(u.count), 0),
      comp(static_cast<size_t>(u.count), -1);
  std::vector<char> on_stack(static_cast<size_t>(u.count), 0);
  std::vector<int> stack;
  int next_index = 0, next_comp = 0;
  for (int root = 0; root < u.count; ++root) {
    if (index[static_cast<size_t>(root)] >= 0) continue;
    std::vector<std::pair<int, size_t>> call = {{root, 0}};
    index[static_cast<size_t>(root)] = low[static_cast<size_t>(root)] = next_index++;
    stack.push_back(root);
    on_stack[static_cast<size_t>(root)] = 1;
    while (!call.empty()) {
      auto& [v, k] = call.back();
      const auto& out = adj[static_cast<size_t>(v)];
      if (k < out.size()) {
        const int w = out[k++];
        if (index[static_cast<size_t>(w)] < 0) {
          index[static_cast<size_t>(w)] = low[static_cast<size_t>(w)] = next_index++;
          stack.push_back(w);
          on_stack[static_cast<size_t>(w)] = 1;
          call.emplace_back(w, 0);
        } else if (on_stack[static_cast<size_t>(w)]) {
          low[static_cast<size_t>(v)] =
              std::min(low[static_cast<size_t>(v)], index[static_cast<size_t>(w)]);
        }
        continue;
      }
      if (low[static_cast<size_t>(v)] == index[static_cast<size_t>(v)]) {
        int w;
        do {
          w = stack.back();
          stack.pop_back();
          on_stack[static_cast<size_t>(w)] = 0;
          comp[static_cast<size_t>(w)] = next_comp;
        } while (w != v);
        ++next_comp;
      }
      const int done = v;
      call.pop_back();
      if (!call.empty()) {
        const int parent = call.back().first;
        low[static_cast<size_t>(parent)] =
            std::min(low[static_cast<size_t>(parent)], low[static_cast<size_t>(done)]);
      }
    }
  }
  return comp;
}

// The paper's "trivial node" merge: a unit whose forward part takes no time on either device, that
// touches no backward op through its forward ops, whose backward part takes no time, and that has
// exactly one forward neighbour, joins that neighbour. Returns false when no unit qualifies.
bool MergeOneTrivialUnit(const sim::Problem& p, const ContiguousModel& m, UnionFind& classes,
                         const sim::PerOp<int>& class_of_op, const std::vector<OpEdge>& edges,
                         const Units& u) {
  const auto n = static_cast<size_t>(u.count);
  std::vector<double> fwd_accel(n, 0), fwd_cpu(n, 0), bwd(n, 0);
  std::vector<char> touches_backward(n, 0);
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    const auto unit = static_cast<size_t>(u.of_op[op]);
    const double a = m.accelerators.empty() ? 0 : p.costs.OpTime(op, m.accelerators[0]);
    const double c = m.cpus.empty() ? 0 : p.costs.OpTime(op, m.cpus[0]);
    if (p.g().op(op).kind == OpKind::kForward) {
      fwd_accel[unit] += a;
      fwd_cpu[unit] += c;
    } else {
      bwd[unit] += a + c;
    }
  }
  for (const OpEdge& e : edges) {
    const bool from_fwd = p.g().op(e.from).kind == OpKind::kForward;
    const bool to_fwd = p.g().op(e.to).kind == OpKind::kForward;
    if (from_fwd && !to_fwd) touches_backward[static_cast<size_t>(u.of_op[e.from])] = 1;
    if (!from_fwd && to_fwd) touches_backward[static_cast<size_t>(u.of_op[e.to])] = 1;
  }
  std::vector<int> neighbours(n, 0), neighbour(n, -1);
  for (const auto* list : {&u.true_edges, &u.artificial_edges}) {
    for (const auto& [a, b] : *list) {
      ++neighbours[static_cast<size_t>(a)];
      neighbour[static_cast<size_t>(a)] = b;
      ++neighbours[static_cast<size_t>(b)];
      neighbour[static_cast<size_t>(b)] = a;
    }
  }
  std::vector<int> class_of_unit(n);
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    class_of_unit[static_cast<size_t>(u.of_op[op])] = classes.Find(class_of_op[op]);
  }
  for (size_t v = 0; v < n; ++v) {
    if (fwd_accel[v] < 1e-6 && fwd_cpu[v] < 1e-6 && !touches_backward[v] && neighbours[v] == 1 &&
        bwd[v] < 1e-6) {
      classes.Union(class_of_unit[v], class_of_unit[static_cast<size_t>(neighbour[v])]);
      return true;
    }
  }
  return false;
}

Status CheckDevices(const sim::Problem& p, ContiguousModel* m) {
  if (p.objective == sim::Objective::kStep) {
    return InvalidInput(
        "the exact placers work on the paper's model, objective throughput, latency or pipeline, "
        "not step");
  }
  for (sim::DeviceId d{0}; d < p.num_devices(); ++d) {
    (p.c().device(d).kind == "cpu" ? m->cpus : m->accelerators).push_back(d);
  }
  auto alike = [&](sim::DeviceId x, sim::DeviceId y) {
    const hw::Device& a = p.c().device(x);
    const hw::Device& b = p.c().device(y);
    return a.kind == b.kind && a.peak_flops == b.peak_flops && a.memory_bytes == b.memory_bytes &&
           a.memory_bandwidth_bytes_per_s == b.memory_bandwidth_bytes_per_s;
  };
  for (sim::DeviceId d : m->cpus) {
    if (!alike(m->cpus.front(), d)) {
      return InvalidInput("the exact contiguous placers need identical CPUs; " +
                          p.c().device(m->cpus.front()).name + " and " + p.c().device(d).name +
                          " differ");
    }
  }
  // Accelerators in classes of alike ones, numbered as first met.
  std::vector<sim::DeviceId> class_first;
  for (sim::DeviceId d : m->accelerators) {
    size_t c = 0;
    while (c < class_first.size() && !alike(class_first[c], d)) ++c;
    if (c == class_first.size()) {
      class_first.push_back(d);
      m->class_memory_bytes.push_back(p.c().device(d).memory_bytes);
      m->accel_memory_bytes = std::max(m->accel_memory_bytes, p.c().device(d).memory_bytes);
    }
    m->accel_class.push_back(static_cast<int>(c));
  }
  // Interleaved chunks run one replica a stage.
  const bool chunked = sim::RowOf(p.schedule).interleaves && p.virtual_stages > 1;
  m->choose_replicas = p.replicas_auto && !chunked && m->accelerators.size() > 1;
  for (sim::DeviceId d : m->accelerators) {
    const hw::Device& device = p.c().device(d);
    m->accel_replicas.push_back(m->choose_replicas ? 1 : device.replicas);
    m->replica_link.push_back(device.replica_link);
    if (m->choose_replicas) {
      // The slowest link among the accelerators: every run of them may be one stage's replicas.
      for (sim::DeviceId e : m->accelerators) {
        if (e == d) continue;
        const hw::Link& l = p.c().LinkBetween(d, e);
        hw::Link& r = m->replica_link.back();
        r.bandwidth_bytes_per_s = std::min(r.bandwidth_bytes_per_s, l.bandwidth_bytes_per_s);
        r.latency_s = std::max(r.latency_s, l.latency_s);
      }
    }
  }
  m->lanes_before.assign(1, 0);
  for (int r : m->accel_replicas) m->lanes_before.push_back(m->lanes_before.back() + r);
  return OkStatus();
}

}  // namespace

StatusOr<ContiguousModel> BuildContiguousModel(const sim::Problem& p, bool for_contiguity) {
  ContiguousModel m;
  DPLACE_RETURN_IF_ERROR(CheckDevices(p, &m));
  const graph::Graph& g = p.g();
  const int num_groups = static_cast<int>(g.groups().size());
  sim::PerOp<int> class_of_op(p.g().ops().size());
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    const graph::GroupId grp = g.op(op).colocation;
    class_of_op[op] = grp != graph::kNoGroup ? grp.value() : num_groups + op.value();
  }
  UnionFind classes(num_groups + p.num_ops());
  std::vector<OpEdge> edges;
  for (const graph::Edge& e : g.edges()) edges.push_back({e.from, e.to});

  // Backward-only classes get a forward position: each backward edge touching one is mirrored.
  std::vector<char> has_forward(static_cast<size_t>(num_groups + p.num_ops()), 0);
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    if (g.op(op).kind == OpKind::kForward) has_forward[static_cast<size_t>(class_of_op[op])] = 1;
  }
  std::vector<OpEdge> mirror;
  for (const OpEdge& e : edges) {
    if (g.op(e.from).kind == OpKind::kForward || g.op(e.to).kind == OpKind::kForward) continue;
    if (!has_forward[static_cast<size_t>(class_of_op[e.from])] ||
        !has_forward[static_cast<size_t>(class_of_op[e.to])]) {
      mirror.push_back({e.to, e.from});
    }
  }

  if (!for_contiguity) mirror.clear();
  Units u = MakeUnits(p, classes, class_of_op, edges, mirror);
  const std::vector<int> comp = for_contiguity ? Components(u) : std::vector<int>();
  std::vector<int> first_unit_of_comp(static_cast<size_t>(u.count), -1);
  for (sim::OpId op{0}; op < p.num_ops() && for_contiguity; ++op) {
    const int c = comp[static_cast<size_t>(u.of_op[op])];
    int& first = first_unit_of_comp[static_cast<size_t>(c)];
    if (first < 0) {
      first = class_of_op[op];
    } else {
      classes.Union(class_of_op[op], first);
    }
  }
  do {
    u = MakeUnits(p, classes, class_of_op, edges, mirror);
  } while (for_contiguity && MergeOneTrivialUnit(p, m, classes, class_of_op, edges, u));
  if (!for_contiguity) {  // no order needed: drop the forward edges, which may now form cycles
    u.true_edges.clear();
    u.artificial_edges.clear();
  }

  // Number the units topologically (Kahn, smallest first) and fill in their data.
  std::vector<std::vector<int>> succ(static_cast<size_t>(u.count));
  std::vector<int> indegree(static_cast<size_t>(u.count), 0);
  for (const auto* list : {&u.true_edges, &u.artificial_edges}) {
    for (const auto& [a, b] : *list) {
      succ[static_cast<size_t>(a)].push_back(b);
      ++indegree[static_cast<size_t>(b)];
    }
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int v = 0; v < u.count; ++v) {
    if (indegree[static_cast<size_t>(v)] == 0) ready.push(v);
  }
  std::vector<int> order_of(static_cast<size_t>(u.count), -1);
  int next = 0;
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    order_of[static_cast<size_t>(v)] = next++;
    for (int w : succ[static_cast<size_t>(v)]) {
      if (--indegree[static_cast<size_t>(w)] == 0) ready.push(w);
    }
  }
  if (next != u.count) return Internal("contiguous model: unit graph is cyclic after fusion");

  m.num_units = u.count;
  const auto n = static_cast<size_t>(u.count);
  m.unit_ops.resize(n);
  m.preds.resize(n);
  m.accel_s.assign(n, 0);
  m.cpu_s.assign(n, 0);
  m.bytes.assign(n, 0);
  m.resident.assign(n, 0);
  m.held.assign(n, 0);
  m.held_selective.assign(n, 0);
  m.gradient_bytes.assign(n, 0);
  std::vector<sim::DeviceId> class_first;  // each class's first accelerator
  for (size_t a = 0; a < m.accelerators.size(); ++a) {
    if (m.accel_class[a] == static_cast<int>(class_first.size()))
      class_first.push_back(m.accelerators[a]);
  }
  m.class_accel_s.assign(class_first.empty() ? 0 : class_first.size() - 1,
                         std::vector<double>(n, 0));
  m.pipeline_memory = p.stage_memory != sim::Problem::StageMemory::kOpSizes;
  m.schedule = p.schedule;
  m.recompute = p.recompute;
  m.microbatches = p.microbatches;
  m.chunks = sim::RowOf(p.schedule).interleaves ? p.virtual_stages : 1;
  m.accel_ok.assign(n, 1);
  m.cpu_ok.assign(n, 1);
  sim::PerOp<int>& unit_of_op = m.unit_of_op;
  unit_of_op.resize(p.g().ops().size());
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    const int unit = order_of[static_cast<size_t>(u.of_op[op])];
    unit_of_op[op] = unit;
    const auto x = static_cast<size_t>(unit);
    m.unit_ops[x].push_back(op);
    m.bytes[x] += sim::OpFootprintBytes(g, op);
    m.resident[x] += sim::OpResidentBytes(g, op);
    if (g.op(op).kind == graph::OpKind::kBackward) m.gradient_bytes[x] += g.op(op).param_bytes;
    if (!m.accelerators.empty()) {
      m.accel_s[x] += p.costs.OpTime(op, m.accelerators[0]);
      for (size_t c = 1; c < class_first.size(); ++c) {
        m.class_accel_s[c - 1][x] += p.costs.OpTime(op, class_first[c]);
      }
      // A unit runs on accelerators where it may run on every class.
      for (sim::DeviceId d : class_first) {
        if (!p.Allowed(op, d)) m.accel_ok[x] = 0;
      }
    } else {
      m.accel_ok[x] = 0;
    }
    if (!m.cpus.empty()) {
      m.cpu_s[x] += p.costs.OpTime(op, m.cpus[0]);
      if (!p.Allowed(op, m.cpus[0])) m.cpu_ok[x] = 0;
    } else {
      m.cpu_ok[x] = 0;
    }
  }
  for (const auto* list : {&u.true_edges, &u.artificial_edges}) {
    for (const auto& [a, b] : *list) {
      m.preds[static_cast<size_t>(order_of[static_cast<size_t>(b)])].push_back(
          order_of[static_cast<size_t>(a)]);
    }
  }
  for (auto& pr : m.preds) {
    std::sort(pr.begin(), pr.end());
    pr.erase(std::unique(pr.begin(), pr.end()), pr.end());
  }
  // Transfer cost of a tensor between two devices of the model (uniform links assumed).
  const sim::DeviceId a0 = m.accelerators.empty() ? m.cpus[0] : m.accelerators[0];
  const sim::DeviceId a1 = m.accelerators.size() > 1            ? m.accelerators[1]
                           : !m.cpus.empty() && m.cpus[0] != a0 ? m.cpus[0]
                                                                : a0;
  m.produced.resize(n);
  m.consumed.resize(n);
  m.consumed_kind.resize(n);
  std::vector<std::pair<int, graph::TensorId>> kept_in_unit;  // (unit, storage): held, once each
  for (graph::TensorId t{0}; t < g.num_tensors(); ++t) {
    ContiguousModel::Tensor info;
    info.id = t;
    const sim::OpId producer = g.tensor(t).producer;
    info.producer = unit_of_op[producer];
    const bool forward = g.op(producer).kind == graph::OpKind::kForward;
    std::vector<std::pair<int, char>> readers;  // (unit, kind) of each reading op elsewhere
    for (sim::OpId c : g.Consumers(t)) {
      const int unit = unit_of_op[c];
      const bool backward = g.op(c).kind != graph::OpKind::kForward;
      if (unit == info.producer) {
        info.producer_keeps = info.producer_keeps || backward;
      } else {
        readers.emplace_back(unit, backward ? 2 : 1);
      }
    }
    std::sort(readers.begin(), readers.end());
    for (const auto& [unit, kind] : readers) {
      if (info.consumers.empty() || info.consumers.back() != unit) {
        info.consumers.push_back(unit);
        info.consumer_kind.push_back(0);
      }
      info.consumer_kind.back() = static_cast<char>(info.consumer_kind.back() | kind);
    }
    for (char kind : info.consumer_kind) info.forward_consumers += (kind & 1) ? 1 : 0;
    const graph::TensorId root = g.StorageOf(t);
    const double root_bytes = root >= 0 ? g.tensor(root).bytes : 0;
    if (info.consumers.empty()) {
      // Read by its own unit only: held while a backward op there keeps it.
      if (forward && info.producer_keeps && root >= 0)
        kept_in_unit.emplace_back(info.producer, root);
      continue;
    }
    if (forward) {
      info.kept_bytes = root_bytes;
      info.copy_bytes = g.tensor(t).bytes;
    }
    info.cost = a0 == a1 ? 0 : cost::TransferTime(g.tensor(t), p.c().LinkBetween(a0, a1));
    const int index = static_cast<int>(m.tensors.size());
    m.produced[static_cast<size_t>(info.producer)].push_back(index);
    for (size_t k = 0; k < info.consumers.size(); ++k) {
      const auto c = static_cast<size_t>(info.consumers[k]);
      m.consumed[c].push_back(index);
      m.consumed_kind[c].push_back(info.consumer_kind[k]);
    }
    m.tensors.push_back(std::move(info));
  }
  std::sort(kept_in_unit.begin(), kept_in_unit.end());
  kept_in_unit.erase(std::unique(kept_in_unit.begin(), kept_in_unit.end()), kept_in_unit.end());
  const std::vector<char> core = graph::AttentionCoreOps(g);
  for (const auto& [unit, root] : kept_in_unit) {
    m.held[static_cast<size_t>(unit)] += g.tensor(root).bytes;
    if (!core[g.tensor(root).producer.index()]) {
      m.held_selective[static_cast<size_t>(unit)] += g.tensor(root).bytes;
    }
  }
  return m;
}

UnitSetLoad::UnitSetLoad(const ContiguousModel& model)
    : m_(model),
      in_(static_cast<size_t>(model.num_units), 0),
      inside_consumers_(model.tensors.size(), 0),
      inside_forward_(model.tensors.size(), 0),
      inside_backward_(model.tensors.size(), 0) {
  class_s.assign(model.class_accel_s.size(), 0);
}

void UnitSetLoad::Reset(const std::vector<char>* fixed) {
  fixed_ = fixed;
  if (size_ != 0) {  // after every Add was undone the tables are clean already
    std::fill(in_.begin(), in_.end(), 0);
    std::fill(inside_consumers_.begin(), inside_consumers_.end(), 0);
    std::fill(inside_forward_.begin(), inside_forward_.end(), 0);
    std::fill(inside_backward_.begin(), inside_backward_.end(), 0);
    size_ = 0;
  }
  accel_s = cpu_s = bytes = resident = held = held_selective = boundary = comm = fixed_comm = 0;
  class_s.assign(m_.class_accel_s.size(), 0);
  not_accel = not_cpu = 0;
}

bool UnitSetLoad::Crossing(int t) const {
  const auto& info = m_.tensors[static_cast<size_t>(t)];
  const int inside = inside_consumers_[static_cast<size_t>(t)];
  return in_[static_cast<size_t>(info.producer)] ? inside < static_cast<int>(info.consumers.size())
                                                 : inside > 0;
}

double UnitSetLoad::Holds(int t) const {
  const auto& info = m_.tensors[static_cast<size_t>(t)];
  const auto i = static_cast<size_t>(t);
  if (in_[static_cast<size_t>(info.producer)]) {
    const bool kept = info.producer_keeps || inside_backward_[i] > 0 ||
                      inside_forward_[i] < info.forward_consumers;
    return kept ? info.kept_bytes : 0;
  }
  return inside_consumers_[i] > 0 ? info.copy_bytes : 0;
}

void UnitSetLoad::Toggle(int unit, double sign) {
  const auto x = static_cast<size_t>(unit);
  auto account = [this](int t, double s) {
    if (!Crossing(t)) return;
    const auto& info = m_.tensors[static_cast<size_t>(t)];
    comm += s * info.cost;
    if (fixed_ && (*fixed_)[static_cast<size_t>(info.producer)]) fixed_comm += s * info.cost;
  };
  for (int t : m_.produced[x]) account(t, -1);
  for (int t : m_.consumed[x]) account(t, -1);
  if (m_.pipeline_memory) {
    for (int t : m_.produced[x]) boundary -= Holds(t);
    for (int t : m_.consumed[x]) boundary -= Holds(t);
  }
  in_[x] = sign > 0;
  size_ += sign > 0 ? 1 : -1;
  const int step = sign > 0 ? 1 : -1;
  const auto& consumed = m_.consumed[x];
  for (size_t k = 0; k < consumed.size(); ++k) {
    const auto t = static_cast<size_t>(consumed[k]);
    inside_consumers_[t] += step;
    const char kind = m_.consumed_kind[x][k];
    if (kind & 1) inside_forward_[t] += step;
    if (kind & 2) inside_backward_[t] += step;
  }
  for (int t : m_.produced[x]) account(t, 1);
  for (int t : m_.consumed[x]) account(t, 1);
  if (m_.pipeline_memory) {
    for (int t : m_.produced[x]) boundary += Holds(t);
    for (int t : m_.consumed[x]) boundary += Holds(t);
  }
  accel_s += sign * m_.accel_s[x];
  for (size_t c = 0; c < class_s.size(); ++c) class_s[c] += sign * m_.class_accel_s[c][x];
  cpu_s += sign * m_.cpu_s[x];
  bytes += sign * m_.bytes[x];
  resident += sign * m_.resident[x];
  held += sign * m_.held[x];
  held_selective += sign * m_.held_selective[x];
  gradient_bytes += sign * m_.gradient_bytes[x];
  not_accel += (m_.accel_ok[x] ? 0 : 1) * static_cast<int>(sign);
  not_cpu += (m_.cpu_ok[x] ? 0 : 1) * static_cast<int>(sign);
}

void UnitSetLoad::Add(int unit) { Toggle(unit, 1); }
void UnitSetLoad::Undo(int unit) { Toggle(unit, -1); }

}  // namespace dplace::place
