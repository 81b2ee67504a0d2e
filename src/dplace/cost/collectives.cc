#include "dplace/cost/collectives.h"

#include <cmath>

namespace dplace::cost {
namespace {

// One level of n ranks, ring (and, across nodes, tree).
double LevelTime(Collective kind, double bytes, int n, const hw::Level& level, bool tree_allowed) {
  if (n < 2 || bytes <= 0) return 0;
  const double share = bytes / n;
  const double steps = kind == Collective::kAllReduce ? 2.0 * (n - 1) : n - 1.0;
  const double bandwidth_s = steps * share / level.bandwidth_bytes_per_s;
  const double ring = steps * level.latency_s + bandwidth_s;
  if (!tree_allowed || kind != Collective::kAllReduce) return ring;
  const double tree = 2 * std::ceil(std::log2(n)) * level.latency_s + bandwidth_s;
  return std::min(ring, tree);
}

}  // namespace

double RingAllReduceTime(double bytes, int ranks, const hw::Link& link) {
  if (ranks < 2) return 0;
  const double n = ranks;
  return 2 * (n - 1) * (link.latency_s + bytes / n / link.bandwidth_bytes_per_s);
}

double CollectiveTime(Collective kind, double bytes, std::span<const int> span,
                      const hw::Machine& m) {
  double total = 0;
  double part = bytes;  // what the next level up works on
  // Up the levels: the inner levels reduce-scatter (all-reduce) or, for an all-gather, gather last.
  int outer = -1;
  for (size_t i = 0; i < span.size(); ++i) {
    if (span[i] > 1) outer = static_cast<int>(i);
  }
  if (outer < 0) return 0;
  for (int i = 0; i <= outer; ++i) {
    const int n = span[static_cast<size_t>(i)];
    if (n < 2) continue;
    const hw::Level& level = m.levels[static_cast<size_t>(i)];
    const bool tree = i > 0;
    if (i == outer) {
      total += LevelTime(kind, part, n, level, tree);
    } else {
      // Inner level: reduce-scatter (and, for an all-reduce, all-gather after the outer levels),
      // or the gather of an all-gather, each on what this level holds.
      const Collective inner =
          kind == Collective::kAllGather ? Collective::kAllGather : Collective::kReduceScatter;
      total += LevelTime(inner, part, n, level, false);
      if (kind == Collective::kAllReduce) {
        total += LevelTime(Collective::kAllGather, part, n, level, false);
      }
      part /= n;
    }
  }
  return total;
}

double SendTime(double bytes, int level, const hw::Machine& m) {
  const hw::Level& l = m.levels[static_cast<size_t>(level)];
  return l.latency_s + bytes / l.bandwidth_bytes_per_s;
}

}  // namespace dplace::cost
