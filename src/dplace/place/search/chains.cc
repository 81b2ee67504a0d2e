#include "dplace/place/search/chains.h"

#include <algorithm>
#include <string>

#include "dplace/base/union_find.h"
#include "dplace/place/registry.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// Paths taken one by one; the ops left after this many become clusters of one op each, so that
// clustering stays O(kMaxPaths × (ops + edges)) on wide graphs.
constexpr int kMaxPaths = 2048;

// Mean transfer time of each tensor over the links between distinct devices (zero on one device).
std::vector<double> MeanTransferTimes(const sim::Problem& p) {
  double latency = 0, inverse_bandwidth = 0;
  int pairs = 0;
  for (sim::DeviceId a = 0; a < p.num_devices(); ++a) {
    for (sim::DeviceId b = 0; b < p.num_devices(); ++b) {
      if (a == b) continue;
      const hw::Link& link = p.c().LinkBetween(a, b);
      latency += link.latency_s;
      inverse_bandwidth += 1 / link.bandwidth_bytes_per_s;
      ++pairs;
    }
  }
  std::vector<double> times(static_cast<size_t>(p.g().num_tensors()), 0);
  if (pairs == 0) return times;
  for (size_t t = 0; t < times.size(); ++t) {
    const graph::Tensor& tensor = p.g().tensors()[t];
    times[t] = tensor.transfer_time_s >= 0 ? tensor.transfer_time_s
                                           : (latency + tensor.bytes * inverse_bandwidth) / pairs;
  }
  return times;
}

// One group per linear cluster after merging by co-location: its units and its compute time.
struct Group {
  std::vector<size_t> units;
  double work_s = 0;
};

std::vector<Group> ClusterGroups(const sim::Problem& p, const std::vector<Unit>& units) {
  const std::vector<int> cluster = LinearClusters(p);
  const int clusters = cluster.empty() ? 0 : *std::max_element(cluster.begin(), cluster.end()) + 1;
  UnionFind sets(static_cast<size_t>(clusters));
  for (const Unit& u : units) {
    const int first = cluster[static_cast<size_t>(u.ops.front())];
    for (sim::OpId op : u.ops) sets.Join(first, cluster[static_cast<size_t>(op)]);
  }
  std::vector<int> group_of(static_cast<size_t>(clusters), -1);
  std::vector<Group> groups;
  for (size_t u = 0; u < units.size(); ++u) {
    const auto root =
        static_cast<size_t>(sets.Find(cluster[static_cast<size_t>(units[u].ops.front())]));
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

class ChainsPlacer : public Placer {
 public:
  std::string_view name() const override { return "chains"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const BudgetClock clock(ctx);
    const std::vector<Unit> units = MakeUnits(p);
    const int64_t default_evaluations =
        ctx.budget.time_limit_s > 0
            ? 0
            : std::clamp<int64_t>(20 * static_cast<int64_t>(units.size()), 2000, 20000);

    // Start: the caller's, else the better of one device and the cheapest contiguous runs.
    sim::Placement current;
    Score current_score;
    std::string start = "the given start";
    if (ctx.start != nullptr && ctx.start->size() == static_cast<size_t>(p.num_ops())) {
      current = *ctx.start;
      current_score = ScoreOf(ctx.evaluator->Evaluate(current));
    } else {
      for (const char* name : {"single", "contiguous"}) {
        auto placer = MakePlacer(name);
        if (!placer.ok()) continue;
        PlaceContext sub{.evaluator = ctx.evaluator, .seed = ctx.seed};
        auto placed = (*placer)->Place(p, sub);
        if (!placed.ok()) return placed.status();
        const Score s = ScoreOf(ctx.evaluator->Evaluate(*placed));
        if (current.empty() || s < current_score) {
          current = std::move(*placed);
          current_score = s;
          start = name;
        }
      }
    }
    std::vector<sim::DeviceId> unit_device(units.size());
    for (size_t u = 0; u < units.size(); ++u)
      unit_device[u] = current[static_cast<size_t>(units[u].ops.front())];

    const std::vector<Group> groups = ClusterGroups(p, units);
    ctx.evaluator->SetBase(current);
    int passes = 0, moves = 0;
    bool improved = true;
    while (improved && !clock.Out(default_evaluations)) {
      improved = false;
      ++passes;
      for (const Group& g : groups) {
        if (clock.Out(default_evaluations)) break;
        sim::DeviceId best_to = -1;
        Score best = current_score;
        for (sim::DeviceId to = 0; to < p.num_devices(); ++to) {
          const bool allowed = std::all_of(g.units.begin(), g.units.end(), [&](size_t u) {
            const auto& d = units[u].devices;
            return std::find(d.begin(), d.end(), to) != d.end();
          });
          const bool there = std::all_of(g.units.begin(), g.units.end(),
                                         [&](size_t u) { return unit_device[u] == to; });
          if (!allowed || there) continue;
          for (size_t u : g.units) Assign(units[u], to, &current);
          const Score s = ScoreOf(ctx.evaluator->EvaluateNear(current, ToBeat(best)));
          if (s < best) {
            best = s;
            best_to = to;
          }
        }
        for (size_t u : g.units) {
          if (best_to >= 0) unit_device[u] = best_to;
          Assign(units[u], unit_device[u], &current);
        }
        if (best_to >= 0) {
          current_score = best;
          ctx.evaluator->SetBase(current);
          improved = true;
          ++moves;
        }
      }
    }
    ctx.note = std::to_string(groups.size()) + " clusters from " + start + "; " +
               std::to_string(moves) + " moves in " + std::to_string(passes) + " passes";
    return current;
  }
};

}  // namespace

std::vector<std::vector<size_t>> ChainGroups(const sim::Problem& p,
                                             const std::vector<Unit>& units) {
  std::vector<std::vector<size_t>> out;
  for (Group& g : ClusterGroups(p, units)) out.push_back(std::move(g.units));
  return out;
}

std::vector<int> LinearClusters(const sim::Problem& p) {
  const graph::Graph& g = p.g();
  const auto n = static_cast<size_t>(p.num_ops());
  std::vector<double> work(n);
  for (sim::OpId op = 0; op < p.num_ops(); ++op) {
    work[static_cast<size_t>(op)] = p.costs.MinOpTime(
        op, p.num_devices(), [&](sim::OpId o, sim::DeviceId d) { return p.Allowed(o, d); });
  }
  const std::vector<double> transfer = MeanTransferTimes(p);
  std::vector<int> cluster(n, -1);
  std::vector<double> length(n);
  std::vector<sim::OpId> from(n);
  int next = 0;
  size_t left = n;
  while (left > 0 && next < kMaxPaths) {
    // The longest path through the ops not yet clustered, ending at `end`.
    sim::OpId end = -1;
    for (sim::OpId op : g.TopologicalOrder()) {
      const auto i = static_cast<size_t>(op);
      if (cluster[i] >= 0) continue;
      double before = 0;
      from[i] = -1;
      for (graph::TensorId t : g.Inputs(op)) {
        const sim::OpId producer = g.tensor(t).producer;
        if (cluster[static_cast<size_t>(producer)] >= 0) continue;
        const double via = length[static_cast<size_t>(producer)] + transfer[static_cast<size_t>(t)];
        if (from[i] < 0 || via > before) {
          before = via;
          from[i] = producer;
        }
      }
      length[i] = before + work[i];
      if (end < 0 || length[i] > length[static_cast<size_t>(end)]) end = op;
    }
    for (sim::OpId op = end; op >= 0; op = from[static_cast<size_t>(op)]) {
      cluster[static_cast<size_t>(op)] = next;
      --left;
    }
    ++next;
  }
  for (int& c : cluster) {
    if (c < 0) c = next++;
  }
  return cluster;
}

std::unique_ptr<Placer> MakeChainsPlacer() { return std::make_unique<ChainsPlacer>(); }

}  // namespace dplace::place
