#include "dplace/job/schedule.h"

#include <algorithm>
#include <limits>

#include "dplace/base/status.h"
#include "dplace/sched/orders.h"

namespace dplace::job {
namespace {

// A rank's order of sched/orders.h as actions.
void Append(const std::vector<sched::Task>& order, std::vector<Action>* out) {
  for (const sched::Task& t : order) {
    out->push_back(
        {t.backward ? ActionKind::kBackward : ActionKind::kForward, t.microbatch, t.chunk});
  }
}

// Zero bubble (Qi et al. 2024): forwards and input gradients in the row's warm-up order (H1: one
// warm-up forward for each rank after this one, as 1F1B; H2: two), each weight gradient run where
// the rank would otherwise wait or where more than the row lets wait, the rest at the end. The
// order is built as the paper's heuristic builds it, on unit times (F = B = W = 1, sends free), and
// then fixed, as torch.distributed.pipelining's schedules are.
std::vector<std::vector<Action>> ZeroBubble(const ScheduleRow& row, int ranks, int m) {
  std::vector<std::vector<Action>> plain(static_cast<size_t>(ranks)), out = plain;
  for (int r = 0; r < ranks; ++r) {
    Append(sched::WarmupOrder(sched::WarmupForwards(row, ranks - r - 1, m), m),
           &plain[static_cast<size_t>(r)]);
  }
  // Unit-time simulation: end times of F and B of (micro-batch, rank); -1 not yet run.
  std::vector<int> f_end(static_cast<size_t>(m) * ranks, -1), b_end = f_end;
  std::vector<size_t> next(static_cast<size_t>(ranks), 0);
  std::vector<int> pending_w(static_cast<size_t>(ranks), 0), next_w(static_cast<size_t>(ranks), 0);
  auto at = [ranks](int mb, int r) { return static_cast<size_t>(mb) * ranks + r; };
  size_t left = static_cast<size_t>(ranks) * m * 3;
  for (int now = 0; left > 0; ++now) {
    for (int r = 0; r < ranks; ++r) {
      const auto& order = plain[static_cast<size_t>(r)];
      size_t& i = next[static_cast<size_t>(r)];
      bool ready = false;
      if (i < order.size()) {
        const Action& a = order[i];
        auto done = [now](int end) { return end >= 0 && end <= now; };
        ready = a.kind == ActionKind::kForward
                    ? r == 0 || done(f_end[at(a.microbatch, r - 1)])
                    : done(f_end[at(a.microbatch, r)]) &&
                          (r == ranks - 1 || done(b_end[at(a.microbatch, r + 1)]));
      }
      // Rank r keeps at most the row's per-stage allowance x r weight gradients waiting (the
      // paper's memory bound: 1F1B's activations, H2 about twice them); past that the oldest runs
      // at once.
      const bool overdue =
          pending_w[static_cast<size_t>(r)] > row.weights_waiting_per_stage_before * r;
      if (ready && !overdue) {
        const Action& a = order[i++];
        (a.kind == ActionKind::kForward ? f_end : b_end)[at(a.microbatch, r)] = now + 1;
        if (a.kind == ActionKind::kBackward) ++pending_w[static_cast<size_t>(r)];
        out[static_cast<size_t>(r)].push_back(a);
        --left;
      } else if (pending_w[static_cast<size_t>(r)] > 0) {
        --pending_w[static_cast<size_t>(r)];
        out[static_cast<size_t>(r)].push_back(
            {ActionKind::kWeight, next_w[static_cast<size_t>(r)]++, 0});
        --left;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::vector<Action>> ScheduleActions(Schedule s, int ranks, int chunks,
                                                 int microbatches) {
  const ScheduleRow& row = RowOf(s);
  if (row.splits_backward) return ZeroBubble(row, ranks, microbatches);
  std::vector<std::vector<Action>> actions(static_cast<size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    Append(row.interleaves
               ? sched::InterleavedOrder(r, ranks, chunks, microbatches)
               : sched::WarmupOrder(sched::WarmupForwards(row, ranks - r - 1, microbatches),
                                    microbatches),
           &actions[static_cast<size_t>(r)]);
  }
  return actions;
}

std::vector<int> HeldMicrobatches(const std::vector<std::vector<Action>>& actions, bool split) {
  std::vector<int> held;
  for (const std::vector<Action>& rank : actions) {
    int now = 0, most = 0;
    for (const Action& a : rank) {
      if (a.kind == ActionKind::kForward) most = std::max(most, ++now);
      if (a.kind == (split ? ActionKind::kWeight : ActionKind::kBackward)) --now;
    }
    held.push_back(most);
  }
  return held;
}

std::vector<double> SimulateActions(const std::vector<std::vector<Action>>& actions,
                                    std::span<const Work> work, int ranks, int chunks,
                                    double send_s) {
  const int stages = ranks * chunks;
  int microbatches = 0;
  for (const auto& rank : actions) {
    for (const Action& a : rank) microbatches = std::max(microbatches, a.microbatch + 1);
  }
  constexpr double kNotYet = -1;
  // End of F and B of (micro-batch, virtual stage).
  std::vector<double> f_end(static_cast<size_t>(microbatches) * stages, kNotYet);
  std::vector<double> b_end = f_end;
  auto at = [&](int m, int stage) { return static_cast<size_t>(m) * stages + stage; };
  std::vector<size_t> next(static_cast<size_t>(ranks), 0);
  std::vector<double> free_at(static_cast<size_t>(ranks), 0);
  size_t left = 0;
  for (const auto& rank : actions) left += rank.size();
  // Each pass runs every rank's next actions whose inputs are there; a schedule's order always
  // lets some rank go on, so each pass makes progress.
  while (left > 0) {
    size_t ran = 0;
    for (int r = 0; r < ranks; ++r) {
      const auto& order = actions[static_cast<size_t>(r)];
      size_t& i = next[static_cast<size_t>(r)];
      while (i < order.size()) {
        const Action& a = order[i];
        const int stage = a.chunk * ranks + r;
        double ready = 0;
        const size_t key = at(a.microbatch, stage);
        if (a.kind == ActionKind::kForward) {
          if (stage > 0) {
            const double in = f_end[at(a.microbatch, stage - 1)];
            if (in == kNotYet) break;
            ready = in + (ranks > 1 ? send_s : 0);
          }
        } else if (a.kind == ActionKind::kBackward) {
          if (f_end[key] == kNotYet) break;
          ready = f_end[key];
          if (stage + 1 < stages) {
            const double in = b_end[at(a.microbatch, stage + 1)];
            if (in == kNotYet) break;
            ready = std::max(ready, in + (ranks > 1 ? send_s : 0));
          }
        } else {
          if (b_end[key] == kNotYet) break;
          ready = b_end[key];
        }
        const Work& w = work[static_cast<size_t>(stage)];
        const double start = std::max(ready, free_at[static_cast<size_t>(r)]);
        const double length = a.kind == ActionKind::kForward    ? w.forward_s
                              : a.kind == ActionKind::kBackward ? w.backward_s
                                                                : w.weight_s;
        const double end = start + length;
        free_at[static_cast<size_t>(r)] = end;
        if (a.kind == ActionKind::kForward) f_end[key] = end;
        if (a.kind == ActionKind::kBackward) b_end[key] = end;
        ++i;
        ++ran;
      }
    }
    DPLACE_CHECK(ran > 0);  // a schedule that deadlocks is a bug in its order builder
    left -= ran;
  }
  return free_at;
}

}  // namespace dplace::job
