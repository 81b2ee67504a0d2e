#include "dplace/job/schedule.h"

#include <algorithm>
#include <limits>

#include "dplace/base/status.h"
#include "dplace/sched/orders.h"
#include "dplace/sched/timeline.h"

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
  using sched::Phase;
  sched::Pipeline p(stages, ranks, microbatches);
  const double send = ranks > 1 ? send_s : 0;  // chunks of one rank pass nothing over a link
  for (int s = 0; s < stages; ++s) {
    const Work& w = work[static_cast<size_t>(s)];
    p.SetSeconds(s, Phase::kForward, w.forward_s);
    p.SetSeconds(s, Phase::kBackward, w.backward_s);
    p.SetSeconds(s, Phase::kWeight, w.weight_s);
    if (s > 0) p.AddInput(s, Phase::kForward, {s - 1, Phase::kForward, send});
    if (s + 1 < stages) p.AddInput(s, Phase::kBackward, {s + 1, Phase::kBackward, send});
  }
  for (int r = 0; r < ranks; ++r) {
    std::vector<sched::LaneTask> order;
    order.reserve(actions[static_cast<size_t>(r)].size());
    for (const Action& a : actions[static_cast<size_t>(r)]) {
      const Phase phase = a.kind == ActionKind::kForward    ? Phase::kForward
                          : a.kind == ActionKind::kBackward ? Phase::kBackward
                                                            : Phase::kWeight;
      order.push_back({a.chunk * ranks + r, a.microbatch, phase});
    }
    p.SetOrder(r, std::move(order));
  }
  const std::optional<sched::Timeline> run = sched::Timeline::Run(p);
  DPLACE_CHECK(run.has_value());  // a schedule that deadlocks is a bug in its order builder
  return run->lane_end();
}

}  // namespace dplace::job
