#include "dplace/sim/lower_bound.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <memory>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

namespace dplace::sim {
namespace {

PerOp<double> FastestTimes(const Problem& p) {
  PerOp<double> best(p.g().ops().size());
  auto allowed = [&p](OpId op, DeviceId d) { return p.Allowed(op, d); };
  for (OpId op : p.g().op_ids()) best[op] = p.costs.MinOpTime(op, p.num_devices(), allowed);
  return best;
}

// The devices grouped into classes: devices on which every op takes the same time. The best
// weights of the work bound are equal within a class (the bound is concave and symmetric in them),
// so 1,024 identical GPUs are one column, not 1,024.
struct DeviceClasses {
  std::vector<std::vector<double>>
      time;  // per class, by op index: one member's time (inf: not allowed)
  std::vector<double> members;
};

DeviceClasses ClassesOf(const Problem& p) {
  constexpr double kNever = std::numeric_limits<double>::infinity();
  DeviceClasses classes;
  std::unordered_multimap<size_t, size_t> by_hash;  // column hash -> class
  for (DeviceId d : p.c().device_ids()) {
    std::vector<double> column;
    column.reserve(p.g().ops().size());
    size_t hash = 0;
    for (OpId op : p.g().op_ids()) {
      column.push_back(p.Allowed(op, d) ? p.costs.OpTime(op, d) : kNever);
      hash = hash * 1000003 ^ std::hash<double>{}(column.back());
    }
    bool found = false;
    for (auto [it, end] = by_hash.equal_range(hash); it != end && !found; ++it) {
      if (classes.time[it->second] == column) {
        classes.members[it->second] += 1;
        found = true;
      }
    }
    if (!found) {
      by_hash.emplace(hash, classes.time.size());
      classes.time.push_back(std::move(column));
      classes.members.push_back(1);
    }
  }
  return classes;
}

// A bound on the most loaded device, whatever the speeds: for weights w_d >= 0 summing to 1,
// max_d load_d >= sum_d w_d load_d >= sum_i min_d w_d t_id, op i taking t_id on device d. Equal
// weights give the total fastest work over the number of devices; weights that favour the devices
// the cheapest assignment loads most (exponentiated supergradient steps) raise it towards the
// fractional optimum, which counts a CPU ten times slower than a GPU as a tenth of a device.
// `weight` (per class, summing to 1 over the classes: each member w_c / members_c) is set to the
// best weights found.
double WorkBound(const DeviceClasses& classes, const PerOp<double>& fastest_time,
                 std::vector<double>* best_weight) {
  const auto n = fastest_time.size();
  const size_t devices = classes.time.size();
  best_weight->assign(devices, devices == 0 ? 0.0 : 1.0 / static_cast<double>(devices));
  if (n == 0 || devices == 0) return 0;
  constexpr double kNever = std::numeric_limits<double>::infinity();
  const std::vector<double>& members = classes.members;
  // A class of m devices is one device taking t / m per op with m times the weight.
  std::vector<double> time(n * devices);
  for (size_t i = 0; i < n; ++i) {
    for (size_t d = 0; d < devices; ++d) time[i * devices + d] = classes.time[d][i] / members[d];
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
  std::vector<double> weight(members);  // equal weights per device
  double bound = value_of(weight);
  *best_weight = weight;
  // Weights in proportion to each device's speed (fastest over its own time, summed over the ops
  // it may run) are exact when devices differ by a constant factor; steps from there.
  std::vector<double> fastest(devices, 0.0), own(devices, 0.0);
  for (size_t i = 0; i < n; ++i) {
    const double* t = &time[i * devices];
    const double best = fastest_time.vector()[i];  // 0 for an op allowed nowhere, skipped below
    for (size_t d = 0; d < devices; ++d) {
      if (t[d] == kNever) continue;
      fastest[d] += best;
      own[d] += t[d] * members[d];
    }
  }
  for (size_t d = 0; d < devices; ++d)
    weight[d] = members[d] * (own[d] > 0 ? fastest[d] / own[d] : 1e-9);
  // About 3e7 steps in all: 300 rounds for the bundled models, 30 for a 50,000-op graph.
  const auto rounds = std::clamp<size_t>(30'000'000 / (n * devices), 30, 300);
  for (size_t round = 0; round < rounds; ++round) {
    const double value = value_of(weight);
    if (value > bound) {
      bound = value;
      *best_weight = weight;
    }
    if (value <= 0) break;
    const double step = 0.5 / std::sqrt(static_cast<double>(round) + 1);
    for (size_t d = 0; d < devices; ++d) {
      weight[d] *= std::exp(step * std::clamp(load[d] / value - 1, -5.0, 5.0));
    }
  }
  return bound;
}

// The work bound and the path bound together (energetic reasoning, Lopez and Esquirol's form of
// Fernandez and Bussell's bound): in a step of length T, op i starts no earlier than head_i and
// ends no later than T - tail_i (the path bound's heads and tails, which hold for every
// placement), so on a device on which it takes t it runs at least
//     max(0, min(b - a, t, head_i + t - a, b - (T - tail_i - t)))
// inside any window [a, b]. A device is busy at most b - a in the window, so with the work bound's
// weights w_d (summing to 1) the sum over ops of min_d w_d times that overlap is at most b - a. A
// T for which some window breaks this is below every placement's step (a placement ending by T
// would keep it), whether or not larger T break it too: the bound is the largest such T found by
// bisection between `lower` and `upper`. Windows: a from quantiles of the heads, b = T - beta with
// beta from quantiles of the tails (the overlap's last term is then tail_i + t - beta, whatever T).
double EnergyBound(const DeviceClasses& classes, const std::vector<double>& weight,
                   const PerOp<double>& head, const PerOp<double>& tail, double lower,
                   double upper) {
  const size_t n = head.size();
  const size_t devices = classes.time.size();
  if (n == 0 || devices == 0 || !(lower > 0) || !(upper > lower)) return lower;
  // Per class, a member's weight.
  std::vector<double> w(devices);
  for (size_t d = 0; d < devices; ++d) w[d] = weight[d] / classes.members[d];
  // About 1e8 op-window terms in all (a tenth of a second), 4 to 64 points a side.
  constexpr int kRounds = 14;  // bisection to 1e-4 of `lower`
  const double per_window = static_cast<double>(n * devices * kRounds);
  const auto points = static_cast<size_t>(std::clamp(std::sqrt(1e8 / per_window), 4.0, 64.0));
  auto quantiles = [points, n](std::vector<double> values) {
    std::sort(values.begin(), values.end());
    std::vector<double> out = {0.0};
    for (size_t k = 1; k < points; ++k) out.push_back(values[k * (n - 1) / (points - 1)]);
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  };
  const std::vector<double> starts = quantiles(head.vector());
  const std::vector<double> ends = quantiles(tail.vector());
  // Whether window [a, T - beta] is overfull in a step of length T.
  auto window_overfull = [&](double T, double a, double beta) {
    const double b = T - beta;
    const double length = b - a;
    if (length <= 0) return false;
    double energy = 0;
    for (size_t i = 0; i < n && energy <= length; ++i) {
      const double h = head.vector()[i];
      const double q = tail.vector()[i];
      double least = std::numeric_limits<double>::infinity();
      for (size_t d = 0; d < devices; ++d) {
        const double t = classes.time[d][i];
        if (std::isinf(t) || h + t + q > T) continue;  // cannot run there by T
        const double overlap = std::max(0.0, std::min({length, t, h + t - a, q + t - beta}));
        least = std::min(least, w[d] * overlap);
      }
      energy += least;  // infinite where no device can run the op by T
    }
    return energy > length * (1 + 1e-12);
  };
  // Whether some window is overfull; the last overfull window is tried first.
  size_t last = 0;
  auto overfull = [&](double T) {
    const size_t windows = starts.size() * ends.size();
    for (size_t k = 0; k < windows; ++k) {
      const size_t window = (last + k) % windows;
      if (window_overfull(T, starts[window / ends.size()], ends[window % ends.size()])) {
        last = window;
        return true;
      }
    }
    return false;
  };
  double lo = lower * (1 + 1e-9), hi = upper;
  if (!overfull(lo)) return lower;
  for (int round = 0; round < kRounds; ++round) {
    const double mid = 0.5 * (lo + hi);
    (overfull(mid) ? lo : hi) = mid;
  }
  return lo;
}

// Max over co-location groups of the group's total time on the best device allowed for all of it.
double HeaviestGroup(const Problem& p) {
  const graph::Graph& g = p.g();
  double bound = 0;
  for (graph::GroupId grp : g.group_ids()) {
    double best = std::numeric_limits<double>::infinity();
    for (DeviceId d{0}; d < p.num_devices(); ++d) {
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
    for (DeviceId a{0}; a < c.num_devices(); ++a) {
      for (DeviceId b{0}; b < c.num_devices(); ++b) {
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
using Neighbours = PerOp<std::vector<Neighbour>>;

// What a neighbour u of v costs v's device if u runs there: a branch is a chain of ops, so either
// the segment that leads into u (the ops before it along the path that sets its earliest start,
// while each of them feeds only the next; at most kMaxSegment) runs there too, one op after
// another, or some edge of that segment crosses devices and u cannot start before that crossing and
// the ops after it: the earliest such start over the segment's edges is `cut_release`. The segments
// of v's neighbours share no op, so their jobs add up on v's device. The op above the segment (its
// entry: a fork, say) either runs on v's device, and then a u on another device waits for a
// crossing on the way from the entry to it, or it does not, and then the segment on v's device
// waits for the entry's tensors to cross.
struct Segment {
  std::vector<std::pair<double, double>> jobs;  // (release, time), u first
  double cut_release = std::numeric_limits<double>::infinity();
  OpId entry{-1};
  double entry_arrival = 0;  // the entry's end plus the cheapest crossing into the segment
  double rest = 0;           // time of the segment's ops before u
};

constexpr size_t kMaxSegment = 32;
// Neighbours whose two choices (segment or cut) are tried in every combination; the rest count
// only their own op at its own earliest start, which bounds both choices from below.
constexpr size_t kMaxChoices = 5;
// Entries whose two cases (on v's device or not) are tried in every combination; the rest are
// charged neither way.
constexpr size_t kMaxEntries = 2;

Segment SegmentInto(OpId u, const Neighbours& before, const PerOp<int>& sends_to,
                    const PerOp<char>& is_neighbour, const PerOp<double>& start,
                    const PerOp<double>& times) {
  Segment s;
  s.jobs.emplace_back(start[u], times[u]);
  double rest = 0;  // time of the segment's ops from w up to u (u excluded)
  for (OpId w = u; s.jobs.size() < kMaxSegment;) {
    const Neighbour* next = nullptr;
    for (const Neighbour& x : before[w]) {
      const OpId j = x.op;
      if (std::isinf(x.transfer)) continue;  // co-located: never crosses
      if (next == nullptr || start[j] + times[j] > start[next->op] + times[next->op]) {
        next = &x;
      }
    }
    if (next == nullptr) break;
    const OpId j = next->op;
    // It feeds another op too (or v itself, through a co-located edge): the segment ends below it.
    if (sends_to[j] != 1 || is_neighbour[j]) {
      s.entry = next->op;
      s.entry_arrival = start[j] + times[j] + next->transfer;
      break;
    }
    s.cut_release = std::min(s.cut_release, start[j] + times[j] + next->transfer + rest);
    s.jobs.emplace_back(start[j], times[j]);
    rest += times[j];
    w = next->op;
  }
  s.rest = rest;
  return s;
}

// Makespan on one machine of `jobs`, each from its release: in order of release, which is optimal.
double Sequence(std::vector<std::pair<double, double>>& jobs) {
  std::sort(jobs.begin(), jobs.end());
  double end = 0;
  for (const auto& [release, time] : jobs) end = std::max(end, release) + time;
  return end;
}

// Scratch space of EarliestStarts, kept between ops.
struct JoinWork {
  std::vector<std::pair<double, size_t>> arrivals;  // (arrival if sent, index in the neighbours)
  std::vector<std::vector<std::pair<double, double>>> local;  // per neighbour: jobs if it stays
  std::vector<char> stays;  // per neighbour: whether the case lets it share v's device
  std::vector<std::pair<double, double>> fixed, jobs;
  std::vector<size_t> choosing;  // members of S with two choices
};

// The earliest start of v (neighbours `ins`, their `segments`) when bit i of `on` says whether
// entries[i] runs on v's device: the best S, and within it the best choice of segment or cut.
double StartInCase(const std::vector<Neighbour>& ins, const std::vector<Segment>& segments,
                   const std::vector<OpId>& entries, size_t on, const PerOp<double>& start,
                   const PerOp<double>& times, JoinWork* w) {
  // This case's arrival of each neighbour if sent, and its segment's jobs.
  w->arrivals.clear();
  w->local.resize(ins.size());
  w->stays.resize(ins.size());
  for (size_t k = 0; k < ins.size(); ++k) {
    const Segment& seg = segments[k];
    const OpId i = ins[k].op;
    double arrival = start[i] + times[i] + ins[k].transfer;
    w->local[k] = seg.jobs;
    const auto e = std::find(entries.begin(), entries.end(), seg.entry);
    if (seg.entry >= 0 && e != entries.end()) {
      if (on >> (e - entries.begin()) & 1) {
        const double crossed = std::min(seg.cut_release, seg.entry_arrival + seg.rest);
        arrival = std::max(arrival, crossed + times[i] + ins[k].transfer);
      } else {
        w->local[k].back().first = std::max(w->local[k].back().first, seg.entry_arrival);
        for (size_t q = w->local[k].size() - 1; q-- > 0;) {
          w->local[k][q].first =
              std::max(w->local[k][q].first, w->local[k][q + 1].first + w->local[k][q + 1].second);
        }
      }
    }
    // An entry that is itself a neighbour is where the case puts it: on v's device (it
    // never arrives), or not (it never stays).
    w->stays[k] = 1;
    const auto as_entry = std::find(entries.begin(), entries.end(), ins[k].op);
    if (as_entry != entries.end()) {
      if (on >> (as_entry - entries.begin()) & 1) {
        arrival = std::numeric_limits<double>::infinity();
      } else {
        w->stays[k] = 0;
      }
    }
    w->arrivals.emplace_back(arrival, k);
  }
  std::sort(w->arrivals.begin(), w->arrivals.end(), std::greater<>());
  w->fixed.clear();
  w->choosing.clear();
  double value = w->arrivals[0].first;  // S empty
  for (size_t j = 0; j < w->arrivals.size(); ++j) {
    const size_t k = w->arrivals[j].second;
    if (!w->stays[k]) break;  // this S and every larger one would keep it
    if (std::isinf(segments[k].cut_release)) {
      w->fixed.insert(w->fixed.end(), w->local[k].begin(), w->local[k].end());
    } else if (w->choosing.size() < kMaxChoices) {
      w->choosing.push_back(k);
    } else {
      w->fixed.push_back(segments[k].jobs.front());
    }
    double sequence = std::numeric_limits<double>::infinity();
    for (size_t mask = 0; mask < (size_t{1} << w->choosing.size()); ++mask) {
      w->jobs = w->fixed;
      for (size_t c = 0; c < w->choosing.size(); ++c) {
        const size_t q = w->choosing[c];
        if (mask >> c & 1) {
          w->jobs.emplace_back(segments[q].cut_release, segments[q].jobs.front().second);
        } else {
          w->jobs.insert(w->jobs.end(), w->local[q].begin(), w->local[q].end());
        }
      }
      sequence = std::min(sequence, Sequence(w->jobs));
    }
    const double remote = j + 1 < w->arrivals.size() ? w->arrivals[j + 1].first : 0;
    value = std::min(value, std::max(remote, sequence));
  }
  return value;
}

// Earliest start of every op, visiting `order` (a topological order of the side's direction), when
// each op starts after each neighbour either ended on another device and its tensors crossed, or
// ran before it on its own device with its segment (Segment), one op at a time. For a set S of
// neighbours on the op's device, the op starts no earlier than max(the latest arrival of the
// others, the makespan on one machine of what S brings); the best S holds the neighbours whose
// remote arrival is latest (any other S can drop the ones that arrive no later than the rest
// without getting worse), so trying each prefix of the neighbours sorted by arrival finds it, and
// within S each choice of segment or cut for the first kMaxChoices. Beyond kMaxJoin neighbours
// only the plain path is charged (still a bound; the work per op stays quadratic in its
// neighbours). `sends_to[u]`: how many ops u sends to on this side (co-located ones excepted).
// Without `charge`, the plain path everywhere.
PerOp<double> EarliestStarts(const Neighbours& before, const PerOp<int>& sends_to,
                             std::span<const OpId> order, const PerOp<double>& times, bool charge) {
  constexpr size_t kMaxJoin = 256;
  PerOp<double> start(times.size(), 0);
  std::vector<Segment> segments;
  std::vector<OpId> entries;
  JoinWork work;
  PerOp<char> is_neighbour(times.size(), 0);
  for (OpId v : order) {
    const auto& ins = before[v];
    double earliest = 0;
    for (const Neighbour& u : ins) earliest = std::max(earliest, start[u.op] + times[u.op]);
    if (charge && !ins.empty() && ins.size() <= kMaxJoin) {
      segments.clear();
      for (const Neighbour& u : ins) is_neighbour[u.op] = 1;
      for (const Neighbour& u : ins)
        segments.push_back(SegmentInto(u.op, before, sends_to, is_neighbour, start, times));
      for (const Neighbour& u : ins) is_neighbour[u.op] = 0;
      entries.clear();
      for (const Segment& seg : segments) {
        if (seg.entry >= 0 && entries.size() < kMaxEntries &&
            std::find(entries.begin(), entries.end(), seg.entry) == entries.end()) {
          entries.push_back(seg.entry);
        }
      }
      double best = std::numeric_limits<double>::infinity();
      for (size_t on = 0; on < (size_t{1} << entries.size()); ++on)
        best = std::min(best, StartInCase(ins, segments, entries, on, start, times, &work));
      earliest = std::max(earliest, best);
    }
    start[v] = earliest;
  }
  return start;
}

// Critical path that charges every join and every fork. Read forwards, an op waits for its
// producers (EarliestStarts); read backwards, the step lasts after an op starts at least the op,
// then for each consumer either the crossing of what it reads and the rest of its path, or its
// turn on the op's device among the consumers that stay (the same rule on the reversed graph). An
// op's earliest start plus its time plus the shortest rest after it is a bound for every op.
struct Path {
  PerOp<double> head, tail;  // per op: earliest start, and the least time after it ends
  double length = 0;         // max over ops of head + time + tail
};

Path CriticalPath(const Problem& p, const PerOp<double>& times, bool charge) {
  const graph::Graph& g = p.g();
  const size_t n = g.ops().size();
  const CheapestTransfer cheapest(p.c());
  Neighbours producers(n), consumers(n);
  // Inputs are ascending tensor ids and a producer's outputs are consecutive ids, so the tensors
  // one pair exchanges arrive one after another: only the last entry can be the same pair.
  auto add = [](std::vector<Neighbour>& list, OpId op, double transfer) {
    if (list.empty() || list.back().op != op) list.push_back({op, 0.0});
    list.back().transfer += transfer;
  };
  for (OpId v : g.op_ids()) {
    for (graph::TensorId t : g.Inputs(v)) {  // distinct tensors: one read twice crosses once
      const OpId u = g.tensor(t).producer;
      const bool grouped =
          g.op(u).colocation != graph::kNoGroup && g.op(u).colocation == g.op(v).colocation;
      const double transfer =
          grouped ? std::numeric_limits<double>::infinity() : cheapest(g.tensor(t));
      add(producers[v], u, transfer);
      add(consumers[u], v, transfer);
    }
  }
  // How many ops each op sends to, and receives from, co-located ones excepted.
  PerOp<int> sends(n, 0), receives(n, 0);
  for (OpId v : g.op_ids()) {
    for (const Neighbour& u : producers[v]) {
      if (std::isinf(u.transfer)) continue;
      ++sends[u.op];
      ++receives[v];
    }
  }
  const std::vector<OpId>& order = g.TopologicalOrder();
  Path path;
  path.head = EarliestStarts(producers, sends, order, times, charge);
  // Uncharged, the rest after an op adds nothing the forward pass has not seen.
  path.tail.assign(n, 0);
  if (charge) {
    const std::vector<OpId> backwards(order.rbegin(), order.rend());
    path.tail = EarliestStarts(consumers, receives, backwards, times, charge);
  }
  for (OpId v : g.op_ids())
    path.length = std::max(path.length, path.head[v] + times[v] + path.tail[v]);
  return path;
}

}  // namespace

double StepLowerBound(const Problem& p) { return StepLowerBoundParts(p).value(); }

StepBoundParts StepLowerBoundParts(const Problem& p) {
  // With latency kArrival a pair's tensors can share one latency (the path charges one per
  // tensor): the bound of the links without latency holds.
  if (p.step_model.latency == LatencyMode::kArrival) {
    Problem without = p;
    without.step_model.latency = LatencyMode::kGap;
    without.cluster = std::make_shared<const hw::Cluster>(p.c().WithLinksScaled({}, 0));
    return StepLowerBoundParts(without);
  }
  const PerOp<double> fastest = FastestTimes(p);
  const DeviceClasses classes = ClassesOf(p);
  std::vector<double> weight;
  StepBoundParts parts;
  const Path path = CriticalPath(p, fastest, /*charge=*/true);
  parts.path = path.length;
  parts.work = WorkBound(classes, fastest, &weight);
  parts.group = HeaviestGroup(p);
  const double lower = std::max({parts.path, parts.work, parts.group});
  parts.energy = EnergyBound(classes, weight, path.head, path.tail, lower, 2 * lower);
  return parts;
}

double LatencyLowerBound(const Problem& p) {
  return CriticalPath(p, FastestTimes(p), /*charge=*/false).length;
}

double ThroughputLowerBound(const Problem& p) {
  const PerOp<double> fastest = FastestTimes(p);
  const double largest = fastest.empty() ? 0 : *std::max_element(fastest.begin(), fastest.end());
  std::vector<double> weight;
  return std::max({WorkBound(ClassesOf(p), fastest, &weight), largest, HeaviestGroup(p)});
}

}  // namespace dplace::sim
