#include "dplace/place/schedule/list_scheduler.h"

#include <algorithm>
#include <limits>
#include <queue>
#include <string>

#include "dplace/place/units.h"
#ifdef DPLACE_HAVE_CBC
#include "dplace/place/exact/milp.h"
#endif

namespace dplace::place {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// Mean transfer time of each tensor over the links between distinct devices, and mean op times
// over the devices each op may run on: the "average machine" of HEFT's ranks.
struct MeanCosts {
  sim::PerOp<double> op_s;
  sim::PerTensor<double> tensor_s;
};

MeanCosts Means(const sim::Problem& p) {
  const int k = p.num_devices();
  MeanCosts m{sim::PerOp<double>(p.g().ops().size(), 0),
              sim::PerTensor<double>(p.g().tensors().size(), 0)};
  for (sim::OpId op{0}; op < p.num_ops(); ++op) {
    int n = 0;
    for (sim::DeviceId d{0}; d < k; ++d) {
      if (!p.Allowed(op, d)) continue;
      m.op_s[op] += p.costs.OpTime(op, d);
      ++n;
    }
    if (n > 0) m.op_s[op] /= n;
  }
  if (k < 2) return m;
  // A transfer takes latency + bytes / bandwidth (nothing for an empty tensor on a link where that
  // is free): its mean over the ordered pairs is made of three means over the links, taken once.
  double latency = 0, inverse_bandwidth = 0, empty = 0;
  for (sim::DeviceId a{0}; a < k; ++a) {
    for (sim::DeviceId b{0}; b < k; ++b) {
      if (a == b) continue;
      const hw::Link& link = p.c().LinkBetween(a, b);
      latency += link.latency_s;
      inverse_bandwidth += 1 / link.bandwidth_bytes_per_s;
      empty += link.empty_is_free ? 0 : link.latency_s;
    }
  }
  const double pairs = static_cast<double>(k) * (k - 1);
  for (graph::TensorId t{0}; t < p.g().num_tensors(); ++t) {
    const graph::Tensor& tensor = p.g().tensor(t);
    m.tensor_s[t] = tensor.transfer_time_s >= 0 ? tensor.transfer_time_s
                    : tensor.bytes == 0         ? empty / pairs
                                        : (latency + tensor.bytes * inverse_bandwidth) / pairs;
  }
  return m;
}

// Upward ranks: mean time of the op plus the longest (mean transfer + rank) over its consumers.
sim::PerOp<double> UpwardRanks(const sim::Problem& p, const MeanCosts& m) {
  const graph::Graph& g = p.g();
  sim::PerOp<double> rank(g.ops().size(), 0);
  const auto& order = g.TopologicalOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const sim::OpId op = *it;
    double tail = 0;
    for (graph::TensorId t = g.FirstOutput(op); t < g.FirstOutput(op + 1); ++t) {
      for (sim::OpId c : g.Consumers(t)) {
        tail = std::max(tail, m.tensor_s[t] + rank[c]);
      }
    }
    rank[op] = m.op_s[op] + tail;
  }
  return rank;
}

// The schedule being built: device availability, op finish times, static memory in use.
class Schedule {
 public:
  explicit Schedule(const sim::Problem& p)
      : p_(p),
        units_(MakeUnits(p)),
        unit_of_op_(p.g().ops().size()),
        unit_device_(units_.size(), sim::DeviceId(-1)),
        placement_(p.g().ops().size(), sim::DeviceId(0)),
        finish_(p.g().ops().size(), 0),
        free_at_(p.c().devices().size(), 0),
        used_(p.c().devices().size(), 0) {
    for (UnitId u : units_.ids()) {
      for (sim::OpId op : units_[u].ops) unit_of_op_[op] = u;
    }
  }

  const Units& units() const { return units_; }
  UnitId UnitOf(sim::OpId op) const { return unit_of_op_[op]; }
  sim::DeviceId DeviceOf(sim::OpId op) const { return placement_[op]; }

  // Devices `op` may go to: its unit's device once chosen; else the unit's allowed devices with
  // room for its footprint, or (none with room) the allowed one with the most room left.
  std::vector<sim::DeviceId> Candidates(sim::OpId op) const {
    const UnitId u = UnitOf(op);
    if (unit_device_[u] >= 0) return {unit_device_[u]};
    const Unit& unit = units_[u];
    std::vector<sim::DeviceId> fit;
    sim::DeviceId roomiest = unit.devices.empty() ? sim::DeviceId(0) : unit.devices.front();
    for (sim::DeviceId d : unit.devices) {
      if (Room(d) >= unit.footprint_bytes) fit.push_back(d);
      if (Room(d) > Room(roomiest)) roomiest = d;
    }
    if (fit.empty()) fit.push_back(roomiest);
    return fit;
  }

  // When `op`'s inputs are all on `d`, if `op` ran there: a producer elsewhere sends its tensors
  // one after another once it ends (as the simulator's channel carries them).
  double DataReady(sim::OpId op, sim::DeviceId d) const {
    const graph::Graph& g = p_.g();
    double ready = 0, arrive = 0;
    sim::OpId from{-1};
    for (graph::TensorId t : g.Inputs(op)) {  // ascending ids: a producer's tensors are adjacent
      const graph::Tensor& tensor = g.tensor(t);
      if (tensor.producer != from) {
        from = tensor.producer;
        arrive = finish_[from];
      }
      const sim::DeviceId src = DeviceOf(from);
      if (src != d) arrive += cost::TransferTime(tensor, p_.c().LinkBetween(src, d));
      ready = std::max(ready, arrive);
    }
    return ready;
  }
  double EarliestStart(sim::OpId op, sim::DeviceId d) const {
    return std::max(free_at_[d], DataReady(op, d));
  }
  double EarliestFinish(sim::OpId op, sim::DeviceId d) const {
    return EarliestStart(op, d) + p_.costs.OpTime(op, d);
  }

  // Places `op` on `d`, starting as early as it can but not before `not_before`.
  void Place(sim::OpId op, sim::DeviceId d, double not_before = 0) {
    const double start = std::max(not_before, EarliestStart(op, d));
    finish_[op] = start + p_.costs.OpTime(op, d);
    free_at_[d] = finish_[op];
    placement_[op] = d;
    const UnitId u = UnitOf(op);
    if (unit_device_[u] < 0) {
      unit_device_[u] = d;
      used_[d] += units_[u].footprint_bytes;
    }
  }

  double FreeAt(sim::DeviceId d) const { return free_at_[d]; }
  double Finish(sim::OpId op) const { return finish_[op]; }

  double Room(sim::DeviceId d) const { return p_.c().device(d).memory_bytes - used_[d]; }
  sim::Placement& placement() { return placement_; }

 private:
  const sim::Problem& p_;
  Units units_;
  sim::PerOp<UnitId> unit_of_op_;
  PerUnit<sim::DeviceId> unit_device_;
  sim::Placement placement_;
  sim::PerOp<double> finish_;
  sim::PerDevice<double> free_at_, used_;
};

// Ops become ready when all their producers are placed; `visit` is called once per op, in an
// order the policy chooses among the ready ones.
class ReadySet {
 public:
  explicit ReadySet(const graph::Graph& g) : g_(g), waiting_(g.ops().size()) {
    for (sim::OpId op : g.op_ids()) {
      waiting_[op] = static_cast<int>(g.Predecessors(op).size());
      if (waiting_[op] == 0) ready_.push_back(op);
    }
  }
  std::vector<sim::OpId>& ready() { return ready_; }
  // Removes ready()[i] (placed) and adds the consumers it made ready.
  void Done(size_t i) {
    const sim::OpId op = ready_[i];
    ready_[i] = ready_.back();
    ready_.pop_back();
    for (sim::OpId s : g_.Successors(op)) {
      if (--waiting_[s] == 0) ready_.push_back(s);
    }
  }

 private:
  const graph::Graph& g_;
  sim::PerOp<int> waiting_;
  std::vector<sim::OpId> ready_;
};

sim::Placement Heft(const sim::Problem& p) {
  Schedule s(p);
  const sim::PerOp<double> rank = UpwardRanks(p, Means(p));
  ReadySet ready(p.g());
  while (!ready.ready().empty()) {
    auto& r = ready.ready();
    size_t best = 0;
    for (size_t i = 1; i < r.size(); ++i) {
      const double a = rank[r[i]], b = rank[r[best]];
      if (a > b || (a == b && r[i] < r[best])) best = i;
    }
    const sim::OpId op = r[best];
    sim::DeviceId pick{-1};
    double pick_finish = kInf;
    for (sim::DeviceId d : s.Candidates(op)) {
      const double f = s.EarliestFinish(op, d);
      // The first candidate is taken even when every finish is infinite (huge costs overflow).
      if (f < pick_finish || pick < 0) pick_finish = f, pick = d;
    }
    s.Place(op, pick);
    ready.Done(best);
  }
  return std::move(s.placement());
}

// m-ETF and m-SCT as Baechi (SoCC 2020) schedules them: an event-driven list scheduler. At time t
// an op is ready when all its producers have ended; each free device proposes the ready op it
// could start earliest (ties: the op that became ready first) if that op can start by t; of the
// proposals the earliest start wins (ties: the op that became ready first, then the lower device).
// Then t moves to the next moment a device frees up or a ready op could start. An op's data is on
// a device when each producer elsewhere has ended and sent it its tensors (one after another, as
// the simulator's channel carries them).
// m-SCT adds favourite children (Hanen and Munier): a device whose last op's favourite child is
// ready and could start there no later than anywhere else is kept for it. It runs an urgent op
// instead (one that could start on every device by now), the favourite child when it can start,
// or nothing until then.
sim::Placement Etf(const sim::Problem& p, const sim::PerOp<sim::OpId>& favourite) {
  const graph::Graph& g = p.g();
  const int k = p.num_devices();
  const auto n = p.g().ops().size();
  Schedule s(p);
  sim::PerOp<int> waiting(n);
  std::vector<sim::OpId> ready;  // in the order they became ready
  for (sim::OpId op : g.op_ids()) {
    waiting[op] = static_cast<int>(g.Predecessors(op).size());
    if (waiting[op] == 0) ready.push_back(op);
  }
  sim::PerOp<char> is_ready(n, 0);
  for (sim::OpId op : ready) is_ready[op] = 1;
  std::priority_queue<std::pair<double, sim::OpId>, std::vector<std::pair<double, sim::OpId>>,
                      std::greater<>>
      running;
  sim::PerDevice<sim::OpId> last(p.c().devices().size(), sim::OpId(-1));
  double t = 0;
  size_t placed = 0;
  // Per ready op (same order as `ready`): its candidate devices and start time on each.
  std::vector<std::vector<sim::DeviceId>> candidates;
  std::vector<sim::PerDevice<double>> start;
  auto refresh = [&] {
    candidates.resize(ready.size());
    start.resize(ready.size());
    for (size_t i = 0; i < ready.size(); ++i) {
      candidates[i] = s.Candidates(ready[i]);
      start[i].assign(p.c().devices().size(), kInf);
      for (sim::DeviceId d : candidates[i]) {
        start[i][d] = std::max(t, s.EarliestStart(ready[i], d));
      }
    }
  };
  auto earliest = [&](size_t i) {  // over the op's candidates
    return *std::min_element(start[i].begin(), start[i].end());
  };
  auto urgent = [&](size_t i) {  // when it could start on every candidate
    double u = 0;
    for (sim::DeviceId d : candidates[i]) u = std::max(u, start[i][d]);
    return u;
  };
  // The favourite child device d is kept for, as an index into `ready`, or -1.
  auto reserved_for = [&](sim::DeviceId d) -> int {
    const sim::OpId previous = last[d];
    if (favourite.empty() || previous < 0) return -1;
    const sim::OpId f = favourite[previous];
    if (f < 0 || !is_ready[f]) return -1;
    const auto i = static_cast<size_t>(std::find(ready.begin(), ready.end(), f) - ready.begin());
    const double here = start[i][d];
    return here < kInf && here <= earliest(i) ? static_cast<int>(i) : -1;
  };
  while (placed < n) {
    while (!running.empty() && running.top().first <= t) {
      const sim::OpId op = running.top().second;
      running.pop();
      for (sim::OpId c : g.Successors(op)) {
        if (--waiting[c] == 0) {
          ready.push_back(c);
          is_ready[c] = 1;
        }
      }
    }
    refresh();
    while (true) {
      int pick = -1;
      sim::DeviceId pick_device{-1};
      for (sim::DeviceId d{0}; d < k; ++d) {
        if (s.FreeAt(d) > t) continue;
        int proposal = -1;
        if (const int f = reserved_for(d); f >= 0) {
          int u = -1;
          for (size_t i = 0; i < ready.size(); ++i) {
            if (start[i][d] == kInf) continue;
            if (u < 0 || urgent(i) < urgent(u)) u = static_cast<int>(i);
          }
          if (u >= 0 && urgent(u) <= t) {
            proposal = u;
          } else if (start[f][d] <= t) {
            proposal = f;
          }
        } else {
          for (size_t i = 0; i < ready.size(); ++i) {
            const double ts = start[i][d];
            if (ts <= t && (proposal < 0 || ts < start[static_cast<size_t>(proposal)][d])) {
              proposal = static_cast<int>(i);
            }
          }
        }
        // Every proposal starts at t: the op that became ready first wins, then the lower device.
        if (proposal >= 0 && (pick < 0 || proposal < pick)) pick = proposal, pick_device = d;
      }
      if (pick < 0) break;
      const sim::OpId op = ready[static_cast<size_t>(pick)];
      s.Place(op, pick_device, t);
      running.emplace(s.Finish(op), op);
      last[pick_device] = op;
      is_ready[op] = 0;
      ready.erase(ready.begin() + pick);
      ++placed;
      refresh();
    }
    if (placed == n) break;
    if (!running.empty() && running.top().first <= t) continue;  // ops of no time just ended
    // The next moment something can change: an op ends, or a ready op could start somewhere.
    double next = running.empty() ? kInf : running.top().first;
    for (size_t i = 0; i < ready.size(); ++i) {
      for (sim::DeviceId d : candidates[i]) {
        const double ts = start[i][d];
        if (ts > t) next = std::min(next, ts);
      }
    }
    if (next == kInf) {
      // Only infinite start times are left (overflowing costs): place the rest in order.
      if (ready.empty()) break;
      const sim::OpId op = ready.front();
      s.Place(op, candidates[0].front(), t);
      running.emplace(t, op);
      last[candidates[0].front()] = op;
      is_ready[op] = 0;
      ready.erase(ready.begin());
      ++placed;
      continue;
    }
    t = next;
  }
  return std::move(s.placement());
}

// m-TOPO: units in topological order fill devices one after another (fastest kind first), each
// device up to an equal share of the total footprint or its capacity, whichever is smaller.
sim::Placement Topo(const sim::Problem& p) {
  const Units units = MakeUnits(p);
  double total = 0;
  for (const Unit& u : units) total += u.footprint_bytes;
  const int k = p.num_devices();
  const double share = total / std::max(k, 1);
  sim::DeviceId current{0};
  sim::PerDevice<double> filled(p.c().devices().size(), 0), used(p.c().devices().size(), 0);
  sim::Placement placement(p.g().ops().size(), sim::DeviceId(0));
  for (const Unit& unit : units) {
    // Move on when the current device has its share (never past the last device).
    while (current + 1 < k && filled[current] > 0 &&
           filled[current] + unit.footprint_bytes > share) {
      ++current;
    }
    sim::DeviceId d = current;
    if (std::find(unit.devices.begin(), unit.devices.end(), d) == unit.devices.end() ||
        used[d] + unit.footprint_bytes > p.c().device(d).memory_bytes) {
      // Not allowed or full here: the first allowed device with room, else the roomiest.
      d = FirstFit(p, unit, unit.devices.empty() ? std::vector<sim::DeviceId>{d} : unit.devices,
                   &used);
    } else {
      filled[d] += unit.footprint_bytes;
      used[d] += unit.footprint_bytes;
    }
    Assign(unit, d, &placement);
  }
  return placement;
}

// Baechi's favourite children (FavouriteChildren in the header) on precomputed mean costs.
sim::PerOp<sim::OpId> Favourites(const sim::Problem& p, const MeanCosts& m, double time_limit_s) {
#ifdef DPLACE_HAVE_CBC
  // Hanen and Munier's relaxation, as Baechi's m-SCT states it: x_e in [0, 1] per producer ->
  // consumer pair (1: the consumer is not the producer's favourite, so the transfer is paid),
  // start times s, makespan w:
  //   min w  s.t.  s_j >= s_i + p_i + c_e x_e,  w >= s_i + p_i,
  //                sum of x over i's consumers >= (consumers - 1)   (at most one favourite child)
  //                sum of x over j's producers >= (producers - 1)   (at most one favourite parent)
  const graph::Graph& g = p.g();
  Milp lp;
  const int w = lp.AddColumn(0, kInf, 1, false);
  sim::PerOp<int> start(g.ops().size());
  for (sim::OpId op : g.op_ids()) start[op] = lp.AddColumn(0, kInf, 0, false);
  struct Pair {
    sim::OpId from, to;
    int column;
  };
  std::vector<Pair> pairs;
  sim::PerOp<std::vector<int>> out_cols(g.ops().size()), in_cols(g.ops().size());
  for (sim::OpId op : g.op_ids()) {
    const double time = m.op_s[op];
    lp.AddRow({w, start[op]}, {1, -1}, 'G', time);
    for (sim::OpId c : g.Successors(op)) {
      double transfer = 0;  // op's tensors to c, sent one after another
      for (graph::TensorId t : g.Inputs(c)) {
        if (g.tensor(t).producer == op) transfer = std::max(transfer, m.tensor_s[t]);
      }
      const int x = lp.AddColumn(0, 1, 0, false);
      pairs.push_back({op, c, x});
      out_cols[op].push_back(x);
      in_cols[c].push_back(x);
      lp.AddRow({start[c], start[op], x}, {1, -1, -transfer}, 'G', time);
    }
  }
  for (const auto* cols : {&out_cols, &in_cols}) {
    for (const std::vector<int>& c : *cols) {
      if (c.size() < 2) continue;
      lp.AddRow(c, std::vector<double>(c.size(), 1), 'G', static_cast<double>(c.size()) - 1);
    }
  }
  MilpOptions options;
  options.time_limit_s = time_limit_s;
  auto solved = SolveWithCbc(lp, options);
  if (!solved.ok() || solved->values.empty()) return {};
  // Baechi's rounding: a pair is favourite when its x is at most the threshold 0.5; walking the
  // pairs in order, a later favourite replaces an earlier one, so that each op keeps at most one
  // favourite child and each child one favourite parent.
  sim::PerOp<sim::OpId> favourite(p.g().ops().size(), sim::OpId(-1));
  sim::PerOp<sim::OpId> parent(p.g().ops().size(), sim::OpId(-1));
  for (const Pair& e : pairs) {
    if (solved->values[static_cast<size_t>(e.column)] > 0.5) continue;
    const sim::OpId old_child = favourite[e.from];
    if (old_child >= 0) parent[old_child] = sim::OpId(-1);
    const sim::OpId old_parent = parent[e.to];
    if (old_parent >= 0) favourite[old_parent] = sim::OpId(-1);
    favourite[e.from] = e.to;
    parent[e.to] = e.from;
  }
  return favourite;
#else
  (void)p;
  (void)m;
  (void)time_limit_s;
  return {};
#endif
}

// Favourite children without the LP: each op in topological order takes as favourite the child
// it sends the most to among those that have no favourite parent yet. For graphs whose LP is too
// large to solve in seconds (CLP's root solve does not stop at CBC's time limit).
sim::PerOp<sim::OpId> GreedyFavourites(const sim::Problem& p, const MeanCosts& m) {
  const graph::Graph& g = p.g();
  sim::PerOp<sim::OpId> favourite(g.ops().size(), sim::OpId(-1));
  sim::PerOp<char> has_parent(g.ops().size(), 0);
  for (sim::OpId op : g.TopologicalOrder()) {
    double best = -1;
    for (graph::TensorId t = g.FirstOutput(op); t < g.FirstOutput(op + 1); ++t) {
      for (sim::OpId c : g.Consumers(t)) {
        if (has_parent[c] || m.tensor_s[t] <= best) {
          continue;
        }
        best = m.tensor_s[t];
        favourite[op] = c;
      }
    }
    if (favourite[op] >= 0) {
      has_parent[favourite[op]] = 1;
    }
  }
  return favourite;
}

// Producer -> consumer pairs above which m-SCT chooses favourites greedily: Baechi's GNMT-v2
// (5,225 pairs) solves in under a second, a 2,000-op coarse graph of 13,000 pairs took minutes.
constexpr size_t kMaxLpPairs = 8000;
// How long the LP of `pairs` producer -> consumer pairs takes, roughly: (pairs / 4,000)^2 s fits
// the training steps of the bundled models on one core (1,471 pairs: 0.14 s, 3,312: 0.88 s, 3,886:
// 0.86 s, 7,820: 3.8 s). Under a time limit the LP runs only when this fits its share.
double LpSeconds(size_t pairs) {
  const double x = static_cast<double>(pairs) / 4000;
  return x * x;
}

class ListSchedulerPlacer : public Placer {
 public:
  explicit ListSchedulerPlacer(ListPolicy policy) : policy_(policy) {}
  std::string_view name() const override {
    switch (policy_) {
      case ListPolicy::kHeft:
        return "heft";
      case ListPolicy::kTopo:
        return "m_topo";
      case ListPolicy::kEtf:
        return "m_etf";
      case ListPolicy::kSct:
        return "m_sct";
    }
    return "";
  }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    std::string note;
    switch (policy_) {
      case ListPolicy::kHeft:
        return PlaceResult{Heft(p), note};
      case ListPolicy::kTopo:
        return PlaceResult{Topo(p), note};
      case ListPolicy::kEtf:
        return PlaceResult{Etf(p, {}), note};
      case ListPolicy::kSct: {
        const double limit = req.limits.seconds > 0 ? req.limits.seconds / 2 : 30;
        const MeanCosts means = Means(p);
        size_t pairs = 0;
        for (sim::OpId op{0}; op < p.num_ops(); ++op) pairs += p.g().Successors(op).size();
        if (pairs > kMaxLpPairs || (req.limits.seconds > 0 && LpSeconds(pairs) > limit)) {
          note = "favourite children chosen greedily (LP of " + std::to_string(pairs) +
                 (pairs > kMaxLpPairs ? " pairs too large)" : " pairs too slow for the limit)");
          return PlaceResult{Etf(p, GreedyFavourites(p, means)), note};
        }
        sim::PerOp<sim::OpId> favourite = Favourites(p, means, limit);
        if (favourite.empty()) note = "favourite-child LP not solved: plain m-ETF";
        return PlaceResult{Etf(p, favourite), note};
      }
    }
    return Internal("unknown list policy");
  }
  ListPolicy policy_;
};

}  // namespace

sim::PerOp<sim::OpId> FavouriteChildren(const sim::Problem& p, double time_limit_s) {
  return Favourites(p, Means(p), time_limit_s);
}

std::unique_ptr<Placer> MakeListSchedulerPlacer(ListPolicy policy) {
  return std::make_unique<ListSchedulerPlacer>(policy);
}

}  // namespace dplace::place
