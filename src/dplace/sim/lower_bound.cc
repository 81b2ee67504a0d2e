#include "dplace/sim/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <span>
#include <utility>
#include <vector>

namespace dplace::sim {
namespace {

std::vector<double> FastestTimes(const Problem& p) {
  std::vector<double> best(static_cast<size_t>(p.num_ops()));
  auto allowed = [&p](OpId op, DeviceId d) { return p.Allowed(op, d); };
  for (OpId i = 0; i < p.num_ops(); ++i) {
    best[static_cast<size_t>(i)] = p.costs.MinOpTime(i, p.num_devices(), allowed);
  }
  return best;
}

// A bound on the most loaded device, whatever the speeds: for weights w_d >= 0 summing to 1,
// max_d load_d >= sum_d w_d load_d >= sum_i min_d w_d t_id, op i taking t_id on device d. Equal
// weights give the total fastest work over the number of devices; weights that favour the devices
// the cheapest assignment loads most (exponentiated supergradient steps) raise it towards the
// fractional optimum, which counts a CPU ten times slower than a GPU as a tenth of a device.
double WorkBound(const Problem& p, const std::vector<double>& fastest_time) {
  const auto n = static_cast<size_t>(p.num_ops());
  const auto devices = static_cast<size_t>(p.num_devices());
  if (n == 0 || devices == 0) return 0;
  constexpr double kNever = std::numeric_limits<double>::infinity();
  std::vector<double> time(n * devices);
  for (size_t i = 0; i < n; ++i) {
    for (size_t d = 0; d < devices; ++d) {
      const auto op = static_cast<OpId>(i);
      const auto dev = static_cast<DeviceId>(d);
      time[i * devices + d] = p.Allowed(op, dev) ? p.costs.OpTime(op, dev) : kNever;
    }
  }
  // The value of the bound for `weight` (normalised here), and each device's load in the cheapest
  // assignment it weighs, which is the direction in which the value grows.
  std::vector<double> load(devices);
  auto value_of = [&](std::vector<double>& weight) {
    double sum = 0;
    for (double w : weight) sum += w;
    for (double& w : weight) w /= sum;
    std::fill(load.begin(), load.end(), 0.0);
    double value = 0;
    for (size_t i = 0; i < n; ++i) {
      const double* t = &time[i * devices];
      size_t best = 0;
      for (size_t d = 1; d < devices; ++d) {
        if (weight[d] * t[d] < weight[best] * t[best]) best = d;
      }
      if (t[best] == kNever) continue;  // allowed nowhere: the constraints check reports it
      load[best] += t[best];
      value += weight[best] * t[best];
    }
    return value;
  };
  std::vector<double> weight(devices, 1.0);
  double bound = value_of(weight);  // equal weights
  // Weights in proportion to each device's speed (fastest over its own time, summed over the ops
  // it may run) are exact when devices differ by a constant factor; steps from there.
  std::vector<double> fastest(devices, 0.0), own(devices, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double* t = &time[i * devices];
    const double best = fastest_time[i];  // 0 for an op allowed nowhere, skipped below
    for (size_t d = 0; d < devices; ++d) {
      if (t[d] == kNever) continue;
      fastest[d] += best;
      own[d] += t[d];
    }
  }
  for (size_t d = 0; d < devices; ++d) weight[d] = own[d] > 0 ? fastest[d] / own[d] : 1e-9;
  // About 3e7 steps in all: 300 rounds for the bundled models, 30 for a 50,000-op graph.
  const auto rounds = std::clamp<size_t>(30'000'000 / (n * devices), 30, 300);
  for (size_t round = 0; round < rounds; ++round) {
    const double value = value_of(weight);
    bound = std::max(bound, value);
    if (value <= 0) break;
    const double step = 0.5 / std::sqrt(static_cast<double>(round) + 1);
    for (size_t d = 0; d < devices; ++d) {
      weight[d] *= std::exp(step * std::clamp(load[d] / value - 1, -5.0, 5.0));
    }
  }
  return bound;
}

// Max over co-location groups of the group's total time on the best device allowed for all of it.
double HeaviestGroup(const Problem& p) {
  const graph::Graph& g = p.g();
  double bound = 0;
  for (graph::GroupId grp = 0; grp < static_cast<graph::GroupId>(g.groups().size()); ++grp) {
    double best = std::numeric_limits<double>::infinity();
    for (DeviceId d = 0; d < p.num_devices(); ++d) {
      double sum = 0;
      bool ok = true;
      for (OpId op : g.GroupMembers(grp)) {
        if (!p.Allowed(op, d)) {
          ok = false;
          break;
        }
        sum += p.costs.OpTime(op, d);
      }
      if (ok) best = std::min(best, sum);
    }
    if (best < std::numeric_limits<double>::infinity()) bound = std::max(bound, best);
  }
  return bound;
}

// A lower bound on the time any transfer of `tensor` takes: the lowest latency and the highest
// bandwidth over every ordered pair of devices (measured transfer times are taken as given).
// Infinite on a one-device machine, where nothing is ever sent.
class CheapestTransfer {
 public:
  explicit CheapestTransfer(const hw::Cluster& c) {
    for (DeviceId a = 0; a < c.num_devices(); ++a) {
      for (DeviceId b = 0; b < c.num_devices(); ++b) {
        if (a == b) continue;
        latency_s_ = std::min(latency_s_, c.LinkBetween(a, b).latency_s);
        bandwidth_ = std::max(bandwidth_, c.LinkBetween(a, b).bandwidth_bytes_per_s);
      }
    }
    sends_ = c.num_devices() > 1;
  }
  double operator()(const graph::Tensor& tensor) const {
    if (!sends_) return std::numeric_limits<double>::infinity();
    return cost::TransferTime(tensor, hw::Link{bandwidth_, latency_s_});
  }

 private:
  double latency_s_ = std::numeric_limits<double>::infinity();
  double bandwidth_ = 0;
  bool sends_ = false;
};

// The ops next to v on one side (producers, or consumers for the path read backwards), each with
// the cheapest time in which everything it exchanges with v can cross (one tensor after another on
// one channel); infinite for an op in v's co-location group, which never sends.
struct Neighbour {
  OpId op;
  double transfer;
};
using Neighbours = std::vector<std::vector<Neighbour>>;

// Earliest start of every op, visiting `order` (a topological order of the side's direction), when
// each op starts after each neighbour either ended on another device and its tensors crossed, or
// ran before it on its own device, one at a time. For a set S of neighbours on the op's device,
// the op starts no earlier than max(the latest arrival of the others, the makespan of S on one
// machine with each neighbour released at its own earliest start); the best S holds the neighbours
// whose remote arrival is latest (any other S can drop the ones that arrive no later than the rest
// without getting worse), so trying each prefix of the neighbours sorted by arrival finds it.
// Beyond kMaxJoin neighbours only the plain path is charged (still a bound; the work per op stays
// quadratic in its neighbours). Without `charge`, the plain path everywhere.
std::vector<double> EarliestStarts(const Neighbours& before, std::span<const OpId> order,
                                   const std::vector<double>& times, bool charge) {
  constexpr size_t kMaxJoin = 256;
  std::vector<double> start(times.size(), 0);
  std::vector<std::pair<double, OpId>> arrivals;  // (arrival if sent, neighbour)
  std::vector<std::pair<double, double>> local;   // (release, time) of the neighbours in S
  for (OpId v : order) {
    const auto& ins = before[static_cast<size_t>(v)];
    double earliest = 0;
    for (const Neighbour& u : ins) {
      earliest =
          std::max(earliest, start[static_cast<size_t>(u.op)] + times[static_cast<size_t>(u.op)]);
    }
    if (charge && !ins.empty() && ins.size() <= kMaxJoin) {
      arrivals.clear();
      for (const Neighbour& u : ins) {
        const auto i = static_cast<size_t>(u.op);
        arrivals.push_back({start[i] + times[i] + u.transfer, u.op});
      }
      std::sort(arrivals.begin(), arrivals.end(), std::greater<>());
      local.clear();
      double best = arrivals[0].first;  // S empty
      for (size_t j = 0; j < arrivals.size(); ++j) {
        const auto u = static_cast<size_t>(arrivals[j].second);
        local.insert(std::upper_bound(local.begin(), local.end(), std::make_pair(start[u], 0.0)),
                     {start[u], times[u]});
        double sequence = 0;  // one machine, in order of release: optimal for the makespan
        for (const auto& [release, time] : local) sequence = std::max(sequence, release) + time;
        const double remote = j + 1 < arrivals.size() ? arrivals[j + 1].first : 0;
        best = std::min(best, std::max(remote, sequence));
      }
      earliest = std::max(earliest, best);
    }
    start[static_cast<size_t>(v)] = earliest;
  }
  return start;
}

// Critical path that charges every join and every fork. Read forwards, an op waits for its
// producers (EarliestStarts); read backwards, the step lasts after an op starts at least the op,
// then for each consumer either the crossing of what it reads and the rest of its path, or its
// turn on the op's device among the consumers that stay (the same rule on the reversed graph). An
// op's earliest start plus its time plus the shortest rest after it is a bound for every op.
double CriticalPath(const Problem& p, const std::vector<double>& times, bool charge) {
  const graph::Graph& g = p.g();
  const auto n = static_cast<size_t>(p.num_ops());
  const CheapestTransfer cheapest(p.c());
  Neighbours producers(n), consumers(n);
  // Inputs are ascending tensor ids and a producer's outputs are consecutive ids, so the tensors
  // one pair exchanges arrive one after another: only the last entry can be the same pair.
  auto add = [](std::vector<Neighbour>& list, OpId op, double transfer) {
    if (list.empty() || list.back().op != op) list.push_back({op, 0.0});
    list.back().transfer += transfer;
  };
  for (OpId v = 0; v < p.num_ops(); ++v) {
    for (graph::TensorId t : g.Inputs(v)) {  // distinct tensors: one read twice crosses once
      const OpId u = g.tensor(t).producer;
      const bool grouped =
          g.op(u).colocation != graph::kNoGroup && g.op(u).colocation == g.op(v).colocation;
      const double transfer =
          grouped ? std::numeric_limits<double>::infinity() : cheapest(g.tensor(t));
      add(producers[static_cast<size_t>(v)], u, transfer);
      add(consumers[static_cast<size_t>(u)], v, transfer);
    }
  }
  const std::vector<OpId>& order = g.TopologicalOrder();
  const std::vector<double> head = EarliestStarts(producers, order, times, charge);
  // Uncharged, the rest after an op adds nothing the forward pass has not seen.
  std::vector<double> tail(n, 0);
  if (charge) {
    const std::vector<OpId> backwards(order.rbegin(), order.rend());
    tail = EarliestStarts(consumers, backwards, times, charge);
  }
  double critical = 0;
  for (size_t v = 0; v < n; ++v) critical = std::max(critical, head[v] + times[v] + tail[v]);
  return critical;
}

}  // namespace

double StepLowerBound(const Problem& p) {
  const std::vector<double> fastest = FastestTimes(p);
  return std::max(
      {CriticalPath(p, fastest, /*charge=*/true), WorkBound(p, fastest), HeaviestGroup(p)});
}

double LatencyLowerBound(const Problem& p) {
  return CriticalPath(p, FastestTimes(p), /*charge=*/false);
}

double ThroughputLowerBound(const Problem& p) {
  const std::vector<double> fastest = FastestTimes(p);
  const double largest = fastest.empty() ? 0 : *std::max_element(fastest.begin(), fastest.end());
  return std::max({WorkBound(p, fastest), largest, HeaviestGroup(p)});
}

}  // namespace dplace::sim
