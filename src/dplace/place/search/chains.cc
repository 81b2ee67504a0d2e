#include "dplace/place/search/chains.h"

#include <algorithm>
#include <string>

#include "dplace/base/union_find.h"
#include "dplace/place/budget.h"
#include "dplace/place/search/moves.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// Mean transfer time of each tensor over the links between distinct devices (zero on one device).
IdVector<graph::TensorId, double> MeanTransferTimes(const sim::Problem& p) {
  double latency = 0, inverse_bandwidth = 0;
  int pairs = 0;
  for (sim::DeviceId a{0}; a < p.num_devices(); ++a) {
    for (sim::DeviceId b{0}; b < p.num_devices(); ++b) {
      if (a == b) continue;
      const hw::Link& link = p.c().LinkBetween(a, b);
      latency += link.latency_s;
      inverse_bandwidth += 1 / link.bandwidth_bytes_per_s;
      ++pairs;
    }
  }
  IdVector<graph::TensorId, double> times(p.g().tensors().size(), 0);
  if (pairs == 0) return times;
  for (graph::TensorId t : p.g().tensor_ids()) {
    const graph::Tensor& tensor = p.g().tensor(t);
    times[t] = tensor.transfer_time_s >= 0 ? tensor.transfer_time_s
                                           : (latency + tensor.bytes * inverse_bandwidth) / pairs;
  }
  return times;
}

// One group per linear cluster after merging by co-location: its units and its compute time.
struct Group {
  std::vector<UnitId> units;
  double work_s = 0;
};

std::vector<Group> ClusterGroups(const sim::Problem& p, const Units& units, int max_paths) {
  const IdVector<sim::OpId, int> cluster = LinearClusters(p, max_paths);
  const int clusters = cluster.empty() ? 0 : *std::max_element(cluster.begin(), cluster.end()) + 1;
  UnionFind sets(static_cast<size_t>(clusters));
  for (const Unit& u : units) {
    const int first = cluster[u.ops.front()];
    for (sim::OpId op : u.ops) sets.Join(first, cluster[op]);
  }
  std::vector<int> group_of(static_cast<size_t>(clusters), -1);
  std::vector<Group> groups;
  for (UnitId u : units.ids()) {
    const auto root = static_cast<size_t>(sets.Find(cluster[units[u].ops.front()]));
    if (group_of[root] < 0) {
      group_of[root] = static_cast<int>(groups.size());
      groups.emplace_back();
    }
    Group& g = groups[static_cast<size_t>(group_of[root])];
    g.units.push_back(u);
    for (sim::OpId op : units[u].ops) {
      g.work_s += p.costs.MinOpTime(op, p.num_devices(),
                                    [&](sim::OpId o, sim::DeviceId d) { return p.Allowed(o, d); });
    }
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const Group& a, const Group& b) { return a.work_s > b.work_s; });
  return groups;
}

// Best-improvement passes over the groups, largest first: each group whole to the device where
// the evaluation improves most (every unit of it allowed there, not all of it there already);
// done after a pass without a move.
class GroupPasses {
 public:
  explicit GroupPasses(const std::vector<Group>& groups) : groups_(groups) {}

  bool Next(UnitMoves& state, Proposal* p) {
    if (at_ == groups_.size() || passes_ == 0) {
      if (passes_ > 0 && state.accepted() == accepted_) return false;
      if (groups_.empty()) return false;
      accepted_ = state.accepted();
      ++passes_;
      at_ = 0;
    }
    const Group& g = groups_[at_++];
    const Units& units = state.units();
    p->units = g.units;
    p->targets.clear();
    for (sim::DeviceId to{0}; to < state.problem().num_devices(); ++to) {
      const bool allowed = std::all_of(g.units.begin(), g.units.end(), [&](UnitId u) {
        const auto& d = units[u].devices;
        return std::find(d.begin(), d.end(), to) != d.end();
      });
      const bool there = std::all_of(g.units.begin(), g.units.end(),
                                     [&](UnitId u) { return state.device(u) == to; });
      if (allowed && !there) p->targets.push_back(to);
    }
    return true;
  }
  int passes() const { return passes_; }

 private:
  const std::vector<Group>& groups_;
  size_t at_ = 0;
  int passes_ = 0;
  int64_t accepted_ = 0;
};

class ChainsPlacer : public Placer {
 public:
  ChainsPlacer(ChainsOptions options, std::vector<Member> own_start)
      : options_(options), own_start_(std::move(own_start)) {}
  std::string_view name() const override { return "chains"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const Units units = MakeUnits(p);
    const Budget budget(
        req.limits, *req.evaluator,
        std::clamp<int64_t>(options_.evaluations_per_unit * static_cast<int64_t>(units.size()),
                            options_.min_evaluations, options_.max_evaluations));
    sim::Evaluator& evaluator = *req.evaluator;

    // Start: the caller's, else the better of one device and the cheapest contiguous runs.
    sim::Placement current;
    Score current_score;
    std::string start = "the given start";
    if (const sim::Placement* given = StartOf(p, req)) {
      current = *given;
      current_score = ScoreOf(evaluator.Evaluate(current));
    } else {
      for (Member& m : own_start_) {
        // The members keep the request's time; the default evaluations are chains' own.
        Limits left = budget.Remaining();
        if (req.limits.evaluations <= 0) left.evaluations = 0;
        const PlaceRequest sub{.evaluator = req.evaluator, .seed = req.seed, .limits = left};
        DPLACE_ASSIGN_OR_RETURN(PlaceResult placed, m.placer->Place(p, sub));
        const Score s = ScoreOf(evaluator.Evaluate(placed.placement));
        if (current.empty() || s < current_score) {
          current = std::move(placed.placement);
          current_score = s;
          start = m.name;
        }
      }
    }
    const std::vector<Group> groups = ClusterGroups(p, units, options_.max_paths);
    UnitMoves state(p, units, evaluator);
    state.Restart(current, current_score);
    GroupPasses passes(groups);
    BestImprovement accept([&] { return budget.Out(); });
    RunMoves(state, passes, accept, [&] { return budget.Out(); });
    current = state.current();
    const int64_t moves = state.accepted();
    const int passes_run = passes.passes();
    std::string note = std::to_string(groups.size()) + " clusters from " + start + "; " +
                       std::to_string(moves) + " moves in " + std::to_string(passes_run) +
                       " passes";
    return PlaceResult{std::move(current), std::move(note)};
  }

  ChainsOptions options_;
  std::vector<Member> own_start_;
};

}  // namespace

std::vector<std::vector<UnitId>> ChainGroups(const sim::Problem& p, const Units& units,
                                             int max_paths) {
  std::vector<std::vector<UnitId>> out;
  for (Group& g : ClusterGroups(p, units, max_paths)) out.push_back(std::move(g.units));
  return out;
}

IdVector<sim::OpId, int> LinearClusters(const sim::Problem& p, int max_paths) {
  const graph::Graph& g = p.g();
  const size_t n = g.ops().size();
  IdVector<sim::OpId, double> work(n);
  for (sim::OpId op : g.op_ids()) {
    work[op] = p.costs.MinOpTime(op, p.num_devices(),
                                 [&](sim::OpId o, sim::DeviceId d) { return p.Allowed(o, d); });
  }
  const IdVector<graph::TensorId, double> transfer = MeanTransferTimes(p);
  IdVector<sim::OpId, int> cluster(n, -1);
  IdVector<sim::OpId, double> length(n);
  IdVector<sim::OpId, sim::OpId> from(n);
  int next = 0;
  size_t left = n;
  while (left > 0 && next < max_paths) {
    // The longest path through the ops not yet clustered, ending at `end`.
    sim::OpId end{-1};
    for (sim::OpId op : g.TopologicalOrder()) {
      if (cluster[op] >= 0) continue;
      double before = 0;
      from[op] = sim::OpId(-1);
      for (graph::TensorId t : g.Inputs(op)) {
        const sim::OpId producer = g.tensor(t).producer;
        if (cluster[producer] >= 0) continue;
        const double via = length[producer] + transfer[t];
        if (from[op] < 0 || via > before) {
          before = via;
          from[op] = producer;
        }
      }
      length[op] = before + work[op];
      if (end < 0 || length[op] > length[end]) end = op;
    }
    for (sim::OpId op = end; op >= 0; op = from[op]) {
      cluster[op] = next;
      --left;
    }
    ++next;
  }
  for (int& c : cluster) {
    if (c < 0) c = next++;
  }
  return cluster;
}

void ReadOptions(OptionReader& r, ChainsOptions* o) {
  r.Read("max_paths", &o->max_paths, 1, 1 << 30,
         "longest paths taken as clusters; the ops left become clusters of one op");
  r.Read("evaluations_per_unit", &o->evaluations_per_unit, 1, 1 << 20,
         "evaluations per co-location unit without --time-limit or --evaluations");
  r.Read("min_evaluations", &o->min_evaluations, 1, int64_t{1} << 40, "... at least this many");
  r.Read("max_evaluations", &o->max_evaluations, 1, int64_t{1} << 40, "... at most this many");
}

std::unique_ptr<Placer> MakeChainsPlacer(ChainsOptions options, std::vector<Member> own_start) {
  return std::make_unique<ChainsPlacer>(options, std::move(own_start));
}

}  // namespace dplace::place
