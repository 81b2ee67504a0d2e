#include "dplace/sched/orders.h"

#include <algorithm>

namespace dplace::sched {

std::vector<Task> WarmupOrder(int warmup, int microbatches) {
  const int m = microbatches, w = std::clamp(warmup, 0, m);
  std::vector<Task> order;
  order.reserve(2 * static_cast<size_t>(m));
  int f = 0, b = 0;
  for (; f < w; ++f) order.push_back({.microbatch = f});
  while (f < m) {
    order.push_back({.microbatch = f++});
    order.push_back({.microbatch = b++, .backward = true});
  }
  while (b < m) order.push_back({.microbatch = b++, .backward = true});
  return order;
}

std::vector<Task> InterleavedOrder(int rank, int ranks, int chunks, int microbatches) {
  const int total = chunks * microbatches;
  auto task = [&](int k, bool backward) {
    const int c = (k / ranks) % chunks;
    return Task{.chunk = backward ? chunks - 1 - c : c,
                .microbatch = k / (ranks * chunks) * ranks + k % ranks,
                .backward = backward};
  };
  const int warmup = microbatches == ranks
                         ? total
                         : std::min(total, 2 * (ranks - rank - 1) + (chunks - 1) * ranks);
  std::vector<Task> order;
  order.reserve(2 * static_cast<size_t>(total));
  int f = 0, b = 0;
  for (; f < warmup; ++f) order.push_back(task(f, false));
  while (f < total) {
    order.push_back(task(f++, false));
    order.push_back(task(b++, true));
  }
  while (b < total) order.push_back(task(b++, true));
  return order;
}

}  // namespace dplace::sched
