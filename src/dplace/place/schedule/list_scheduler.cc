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
  std::vector<double> op_s, tensor_s;
};

MeanCosts Means(const sim::Problem& p) {
  const int k = p.num_devices();
  MeanCosts m{std::vector<double>(static_cast<size_t>(p.num_ops()), 0),
              std::vector<double>(static_cast<size_t>(p.g().num_tensors()), 0)};
  for (sim::OpId op = 0; op < p.num_ops(); ++op) {
    int n = 0;
    for (sim::DeviceId d = 0; d < k; ++d) {
      if (!p.Allowed(op, d)) continue;
      m.op_s[static_cast<size_t>(op)] += p.costs.OpTime(op, d);
      ++n;
    }
    if (n > 0) m.op_s[static_cast<size_t>(op)] /= n;
  }
  if (k < 2) return m;
  for (graph::TensorId t = 0; t < p.g().num_tensors(); ++t) {
    double sum = 0;
    for (sim::DeviceId a = 0; a < k; ++a) {
      for (sim::DeviceId b = 0; b < k; ++b) {
        if (a != b) sum += cost::TransferTime(p.g().tensor(t), p.c().LinkBetween(a, b));
      }
    }
    m.tensor_s[static_cast<size_t>(t)] = sum / (k * (k - 1));
  }
  return m;
}

// Upward ranks: mean time of the op plus the longest (mean transfer + rank) over its consumers.
std::vector<double> UpwardRanks(const sim::Problem& p, const MeanCosts& m) {
  const graph::Graph& g = p.g();
  std::vector<double> rank(static_cast<size_t>(p.num_ops()), 0);
  const auto& order = g.TopologicalOrder();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const sim::OpId op = *it;
    double tail = 0;
    for (graph::TensorId t = g.FirstOutput(op); t < g.FirstOutput(op + 1); ++t) {
      for (sim::OpId c : g.Consumers(t)) {
        tail = std::max(tail, m.tensor_s[static_cast<size_t>(t)] + rank[static_cast<size_t>(c)]);
      }
    }
    rank[static_cast<size_t>(op)] = m.op_s[static_cast<size_t>(op)] + tail;
  }
  return rank;
}

// The schedule being built: device availability, op finish times, static memory in use.
class Schedule {
 public:
  explicit Schedule(const sim::Problem& p)
      : p_(p),
        units_(MakeUnits(p)),
        unit_of_op_(static_cast<size_t>(p.num_ops()), 0),
        unit_device_(units_.size(), -1),
        placement_(static_cast<size_t>(p.num_ops()), 0),
        finish_(static_cast<size_t>(p.num_ops()), 0),
        free_at_(static_cast<size_t>(p.num_devices()), 0),
        used_(static_cast<size_t>(p.num_devices()), 0) {
    for (size_t u = 0; u < units_.size(); ++u) {
      for (sim::OpId op : units_[u].ops) unit_of_op_[static_cast<size_t>(op)] = static_cast<int>(u);
    }
  }

  const std::vector<Unit>& units() const { return units_; }
  int UnitOf(sim::OpId op) const { return unit_of_op_[static_cast<size_t>(op)]; }
  sim::DeviceId DeviceOf(sim::OpId op) const { return placement_[static_cast<size_t>(op)]; }

  // Devices `op` may go to: its unit's device once chosen; else the unit's allowed devices with
  // room for its footprint, or (none with room) the allowed one with the most room left.
  std::vector<sim::DeviceId> Candidates(sim::OpId op) const {
    const int u = UnitOf(op);
    if (unit_device_[static_cast<size_t>(u)] >= 0) return {unit_device_[static_cast<size_t>(u)]};
    const Unit& unit = units_[static_cast<size_t>(u)];
    std::vector<sim::DeviceId> fit;
    sim::DeviceId roomiest = unit.devices.empty() ? 0 : unit.devices.front();
    for (sim::DeviceId d : unit.devices) {
      if (Room(d) >= unit.footprint_bytes) fit.push_back(d);
      if (Room(d) > Room(roomiest)) roomiest = d;
    }
    if (fit.empty()) fit.push_back(roomiest);
    return fit;
  }

  // When `op`'s inputs are all on `d`, if `op` ran there.
  double DataReady(sim::OpId op, sim::DeviceId d) const {
    const graph::Graph& g = p_.g();
    double ready = 0;
    for (graph::TensorId t : g.Inputs(op)) {
      const sim::OpId from = g.tensor(t).producer;
      const sim::DeviceId src = DeviceOf(from);
      const double arrive =
          finish_[static_cast<size_t>(from)] +
          (src == d ? 0 : cost::TransferTime(g.tensor(t), p_.c().LinkBetween(src, d)));
      ready = std::max(ready, arrive);
    }
    return ready;
  }
  double EarliestStart(sim::OpId op, sim::DeviceId d) const {
    return std::max(free_at_[static_cast<size_t>(d)], DataReady(op, d));
  }
  double EarliestFinish(sim::OpId op, sim::DeviceId d) const {
    return EarliestStart(op, d) + p_.costs.OpTime(op, d);
  }

  void Place(sim::OpId op, sim::DeviceId d) {
    const double start = EarliestStart(op, d);
    finish_[static_cast<size_t>(op)] = start + p_.costs.OpTime(op, d);
    free_at_[static_cast<size_t>(d)] = finish_[static_cast<size_t>(op)];
    placement_[static_cast<size_t>(op)] = d;
    const int u = UnitOf(op);
    if (unit_device_[static_cast<size_t>(u)] < 0) {
      unit_device_[static_cast<size_t>(u)] = d;
      used_[static_cast<size_t>(d)] += units_[static_cast<size_t>(u)].footprint_bytes;
    }
  }

  double Room(sim::DeviceId d) const {
    return p_.c().device(d).memory_bytes - used_[static_cast<size_t>(d)];
  }
  sim::Placement& placement() { return placement_; }

 private:
  const sim::Problem& p_;
  std::vector<Unit> units_;
  std::vector<int> unit_of_op_;
  std::vector<sim::DeviceId> unit_device_;
  sim::Placement placement_;
  std::vector<double> finish_, free_at_, used_;
};

// Ops become ready when all their producers are placed; `visit` is called once per op, in an
// order the policy chooses among the ready ones.
class ReadySet {
 public:
  explicit ReadySet(const graph::Graph& g) : g_(g), waiting_(static_cast<size_t>(g.num_ops())) {
    for (sim::OpId op = 0; op < g.num_ops(); ++op) {
      waiting_[static_cast<size_t>(op)] = static_cast<int>(g.Predecessors(op).size());
      if (waiting_[static_cast<size_t>(op)] == 0) ready_.push_back(op);
    }
  }
  std::vector<sim::OpId>& ready() { return ready_; }
  // Removes ready()[i] (placed) and adds the consumers it made ready.
  void Done(size_t i) {
    const sim::OpId op = ready_[i];
    ready_[i] = ready_.back();
    ready_.pop_back();
    for (sim::OpId s : g_.Successors(op)) {
      if (--waiting_[static_cast<size_t>(s)] == 0) ready_.push_back(s);
    }
  }

 private:
  const graph::Graph& g_;
  std::vector<int> waiting_;
  std::vector<sim::OpId> ready_;
};

sim::Placement Heft(const sim::Problem& p) {
  Schedule s(p);
  const std::vector<double> rank = UpwardRanks(p, Means(p));
  ReadySet ready(p.g());
  while (!ready.ready().empty()) {
    auto& r = ready.ready();
    size_t best = 0;
    for (size_t i = 1; i < r.size(); ++i) {
      const double a = rank[static_cast<size_t>(r[i])], b = rank[static_cast<size_t>(r[best])];
      if (a > b || (a == b && r[i] < r[best])) best = i;
    }
    const sim::OpId op = r[best];
    sim::DeviceId pick = -1;
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

// m-ETF and m-SCT: the ready (op, device) pair with the earliest start (ties: earlier finish,
// higher rank, lower op id). With favourite children, a child whose favourite parent is placed
// goes to that parent's device when it is a candidate.
sim::Placement Etf(const sim::Problem& p, const MeanCosts& means,
                   const std::vector<sim::OpId>& favourite) {
  Schedule s(p);
  const std::vector<double> rank = UpwardRanks(p, means);
  std::vector<sim::OpId> favourite_parent(static_cast<size_t>(p.num_ops()), -1);
  for (size_t op = 0; op < favourite.size(); ++op) {
    if (favourite[op] >= 0)
      favourite_parent[static_cast<size_t>(favourite[op])] = static_cast<sim::OpId>(op);
  }
  ReadySet ready(p.g());
  while (!ready.ready().empty()) {
    auto& r = ready.ready();
    size_t best = 0;
    sim::DeviceId best_device = -1;
    double best_start = kInf, best_finish = kInf;
    for (size_t i = 0; i < r.size(); ++i) {
      const sim::OpId op = r[i];
      std::vector<sim::DeviceId> candidates = s.Candidates(op);
      const sim::OpId parent = favourite_parent[static_cast<size_t>(op)];
      if (parent >= 0 && candidates.size() > 1 &&
          std::count(candidates.begin(), candidates.end(), s.DeviceOf(parent)) > 0) {
        candidates = {s.DeviceOf(parent)};
      }
      for (sim::DeviceId d : candidates) {
        const double start = s.EarliestStart(op, d);
        const double finish = start + p.costs.OpTime(op, d);
        // The first pair is taken even when every start is infinite (huge costs overflow).
        bool better = best_device < 0 || start < best_start ||
                      (start == best_start && finish < best_finish);
        if (start == best_start && finish == best_finish && best_device >= 0) {
          const double a = rank[static_cast<size_t>(op)], b = rank[static_cast<size_t>(r[best])];
          better = a > b || (a == b && op < r[best]);
        }
        if (better) best = i, best_device = d, best_start = start, best_finish = finish;
      }
    }
    s.Place(r[best], best_device);
    ready.Done(best);
  }
  return std::move(s.placement());
}

// m-TOPO: units in topological order fill devices one after another (fastest kind first), each
// device up to an equal share of the total footprint or its capacity, whichever is smaller.
sim::Placement Topo(const sim::Problem& p) {
  const std::vector<Unit> units = MakeUnits(p);
  double total = 0;
  for (const Unit& u : units) total += u.footprint_bytes;
  const int k = p.num_devices();
  const double share = total / std::max(k, 1);
  sim::DeviceId current = 0;
  std::vector<double> filled(static_cast<size_t>(k), 0), used(static_cast<size_t>(k), 0);
  sim::Placement placement(static_cast<size_t>(p.num_ops()), 0);
  for (const Unit& unit : units) {
    // Move on when the current device has its share (never past the last device).
    while (current + 1 < k && filled[static_cast<size_t>(current)] > 0 &&
           filled[static_cast<size_t>(current)] + unit.footprint_bytes > share) {
      ++current;
    }
    sim::DeviceId d = current;
    if (std::find(unit.devices.begin(), unit.devices.end(), d) == unit.devices.end() ||
        used[static_cast<size_t>(d)] + unit.footprint_bytes > p.c().device(d).memory_bytes) {
      // Not allowed or full here: the first allowed device with room, else the roomiest.
      d = FirstFit(p, unit, unit.devices.empty() ? std::vector<sim::DeviceId>{d} : unit.devices,
                   &used);
    } else {
      filled[static_cast<size_t>(d)] += unit.footprint_bytes;
      used[static_cast<size_t>(d)] += unit.footprint_bytes;
    }
    Assign(unit, d, &placement);
  }
  return placement;
}

// Baechi's favourite children (FavouriteChildren in the header) on precomputed mean costs.
std::vector<sim::OpId> Favourites(const sim::Problem& p, const MeanCosts& m, double time_limit_s) {
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
  std::vector<int> start(static_cast<size_t>(p.num_ops()));
  for (sim::OpId op = 0; op < p.num_ops(); ++op)
    start[static_cast<size_t>(op)] = lp.AddColumn(0, kInf, 0, false);
  struct Pair {
    sim::OpId from, to;
    int column;
  };
  std::vector<Pair> pairs;
  std::vector<std::vector<int>> out_cols(static_cast<size_t>(p.num_ops())),
      in_cols(static_cast<size_t>(p.num_ops()));
  for (sim::OpId op = 0; op < p.num_ops(); ++op) {
    const double time = m.op_s[static_cast<size_t>(op)];
    lp.AddRow({w, start[static_cast<size_t>(op)]}, {1, -1}, 'G', time);
    for (sim::OpId c : g.Successors(op)) {
      double transfer = 0;  // the largest tensor op sends c
      for (graph::TensorId t : g.Inputs(c)) {
        if (g.tensor(t).producer == op)
          transfer = std::max(transfer, m.tensor_s[static_cast<size_t>(t)]);
      }
      const int x = lp.AddColumn(0, 1, 0, false);
      pairs.push_back({op, c, x});
      out_cols[static_cast<size_t>(op)].push_back(x);
      in_cols[static_cast<size_t>(c)].push_back(x);
      lp.AddRow({start[static_cast<size_t>(c)], start[static_cast<size_t>(op)], x},
                {1, -1, -transfer}, 'G', time);
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
  std::vector<sim::OpId> favourite(static_cast<size_t>(p.num_ops()), -1);
  std::vector<double> best(static_cast<size_t>(p.num_ops()), 0.5);
  std::vector<char> has_parent(static_cast<size_t>(p.num_ops()), 0);
  for (const Pair& e : pairs) {
    const double x = solved->values[static_cast<size_t>(e.column)];
    if (x < best[static_cast<size_t>(e.from)] && !has_parent[static_cast<size_t>(e.to)]) {
      if (favourite[static_cast<size_t>(e.from)] >= 0)
        has_parent[static_cast<size_t>(favourite[static_cast<size_t>(e.from)])] = 0;
      best[static_cast<size_t>(e.from)] = x;
      favourite[static_cast<size_t>(e.from)] = e.to;
      has_parent[static_cast<size_t>(e.to)] = 1;
    }
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
std::vector<sim::OpId> GreedyFavourites(const sim::Problem& p, const MeanCosts& m) {
  const graph::Graph& g = p.g();
  std::vector<sim::OpId> favourite(static_cast<size_t>(p.num_ops()), -1);
  std::vector<char> has_parent(static_cast<size_t>(p.num_ops()), 0);
  for (sim::OpId op : g.TopologicalOrder()) {
    double best = -1;
    for (graph::TensorId t = g.FirstOutput(op); t < g.FirstOutput(op + 1); ++t) {
      for (sim::OpId c : g.Consumers(t)) {
        if (has_parent[static_cast<size_t>(c)] || m.tensor_s[static_cast<size_t>(t)] <= best) {
          continue;
        }
        best = m.tensor_s[static_cast<size_t>(t)];
        favourite[static_cast<size_t>(op)] = c;
      }
    }
    if (favourite[static_cast<size_t>(op)] >= 0) {
      has_parent[static_cast<size_t>(favourite[static_cast<size_t>(op)])] = 1;
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
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    switch (policy_) {
      case ListPolicy::kHeft:
        return Heft(p);
      case ListPolicy::kTopo:
        return Topo(p);
      case ListPolicy::kEtf:
        return Etf(p, Means(p), {});
      case ListPolicy::kSct: {
        const double limit = ctx.budget.time_limit_s > 0 ? ctx.budget.time_limit_s / 2 : 30;
        const MeanCosts means = Means(p);
        size_t pairs = 0;
        for (sim::OpId op = 0; op < p.num_ops(); ++op) pairs += p.g().Successors(op).size();
        if (pairs > kMaxLpPairs || (ctx.budget.time_limit_s > 0 && LpSeconds(pairs) > limit)) {
          ctx.note = "favourite children chosen greedily (LP of " + std::to_string(pairs) +
                     (pairs > kMaxLpPairs ? " pairs too large)" : " pairs too slow for the limit)");
          return Etf(p, means, GreedyFavourites(p, means));
        }
        std::vector<sim::OpId> favourite = Favourites(p, means, limit);
        if (favourite.empty()) ctx.note = "favourite-child LP not solved: plain m-ETF";
        return Etf(p, means, favourite);
      }
    }
    return Internal("unknown list policy");
  }
  ListPolicy policy_;
};

}  // namespace

std::vector<sim::OpId> FavouriteChildren(const sim::Problem& p, double time_limit_s) {
  return Favourites(p, Means(p), time_limit_s);
}

std::unique_ptr<Placer> MakeListSchedulerPlacer(ListPolicy policy) {
  return std::make_unique<ListSchedulerPlacer>(policy);
}

}  // namespace dplace::place
