#include "dplace/sim/lower_bound.h"

#include <algorithm>
#include <limits>
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

double CriticalPath(const Problem& p, const std::vector<double>& times) {
  std::vector<double> finish(times.size(), 0);
  double critical = 0;
  for (OpId v : p.g().TopologicalOrder()) {
    double start = 0;
    for (OpId u : p.g().Predecessors(v)) start = std::max(start, finish[static_cast<size_t>(u)]);
    finish[static_cast<size_t>(v)] = start + times[static_cast<size_t>(v)];
    critical = std::max(critical, finish[static_cast<size_t>(v)]);
  }
  return critical;
}

}  // namespace

double StepLowerBound(const Problem& p) {
  const std::vector<double> fastest = FastestTimes(p);
  double total = 0;
  for (double t : fastest) total += t;
  return std::max({CriticalPath(p, fastest), total / p.num_devices(), HeaviestGroup(p)});
}

double LatencyLowerBound(const Problem& p) { return CriticalPath(p, FastestTimes(p)); }

double ThroughputLowerBound(const Problem& p) {
  const std::vector<double> fastest = FastestTimes(p);
  double total = 0, largest = 0;
  for (double t : fastest) {
    total += t;
    largest = std::max(largest, t);
  }
  return std::max({total / p.num_devices(), largest, HeaviestGroup(p)});
}

}  // namespace dplace::sim
