#include "dplace/place/exact/contiguous_dp.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

namespace dplace::place {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

enum How : int8_t { kUnset, kFewerAccels, kFewerCpus, kAccelSet, kCpuSet };

class Solver {
 public:
  Solver(const ContiguousModel& m, const IdealLattice& l, double upper_bound, Deadline deadline)
      : deadline_(deadline),
        m_(m),
        l_(l),
        k_(static_cast<int>(m.accelerators.size())),
        cells_((static_cast<int>(m.cpus.size()) + 1) * (k_ + 1)),
        ub_(upper_bound),
        load_(m),
        fixed_(static_cast<size_t>(m.num_units), 0),
        excluded_(static_cast<size_t>(m.num_units), 0) {
    dp_.assign(static_cast<size_t>(l.size()) * static_cast<size_t>(cells_), kInf);
    prev_.assign(dp_.size(), -1);
    how_.assign(dp_.size(), kUnset);
    if (m.choose_replicas) span_.assign(dp_.size(), 1);
    // The most replicas a stage may have: what its load may be divided by.
    for (int r : m.accel_replicas) max_replicas_ = std::max(max_replicas_, r);
    if (m.choose_replicas) max_replicas_ = std::max(1, k_);
    for (int cell = 0; cell < cells_; ++cell) dp_[static_cast<size_t>(cell)] = 0;
  }

  ContiguousSolution Run() {
    const int full = l_.full_id();
    for (int id = 0; id < l_.size() && !stopped_; ++id) {
      if ((id & 0xFF) == 0 && std::chrono::steady_clock::now() > deadline_) {
        stopped_ = true;
        break;
      }
      Finalize(id);
      if (id == full) break;
      Expand(id);
    }
    if (stopped_) Finalize(full);
    ContiguousSolution s;
    s.sets_evaluated = evaluated_;
    s.complete = !stopped_;
    const int last = cells_ - 1;
    const double best = dp_[Index(full, last)];
    if (!(best < kInf) || best >= initial_ub_) return s;
    s.found = true;
    s.max_load = best;
    s.unit_device.assign(static_cast<size_t>(m_.num_units), 0);
    int id = full, cell = last;
    while (true) {
      const How how = static_cast<How>(how_[Index(id, cell)]);
      if (how == kUnset) break;
      const int c = cell / (k_ + 1), f = cell % (k_ + 1);
      if (how == kFewerAccels || how == kFewerCpus) {
        cell = how == kFewerAccels ? cell - 1 : cell - (k_ + 1);
        continue;
      }
      const int from = prev_[Index(id, cell)];
      const int span = how == kAccelSet && !span_.empty() ? span_[Index(id, cell)] : 1;
      const int device = how == kAccelSet ? f - span : -1 - (c - 1);
      for (int u = 0; u < m_.num_units; ++u) {
        if (l_.Contains(id, u) && !l_.Contains(from, u))
          s.unit_device[static_cast<size_t>(u)] = device;
      }
      if (how == kAccelSet && span > 1) {
        s.accel_span.resize(static_cast<size_t>(k_), 1);
        s.accel_span[static_cast<size_t>(device)] = span;
        for (int x = device + 1; x < f; ++x) s.accel_span[static_cast<size_t>(x)] = 0;
      }
      cell = how == kAccelSet ? cell - span : cell - (k_ + 1);
      id = from;
    }
    return s;
  }

 private:
  size_t Index(int id, int cell) const {
    return static_cast<size_t>(id) * static_cast<size_t>(cells_) + static_cast<size_t>(cell);
  }

  // All pushes into `id` are done: a cell may also leave a device unused.
  void Finalize(int id) {
    for (int cell = 0; cell < cells_; ++cell) {
      const int c = cell / (k_ + 1), f = cell % (k_ + 1);
      double& v = dp_[Index(id, cell)];
      if (f > 0 && dp_[Index(id, cell - 1)] < v) {
        v = dp_[Index(id, cell - 1)];
        how_[Index(id, cell)] = kFewerAccels;
      }
      if (c > 0 && dp_[Index(id, cell - (k_ + 1))] < v) {
        v = dp_[Index(id, cell - (k_ + 1))];
        how_[Index(id, cell)] = kFewerCpus;
      }
    }
  }

  void Expand(int id) {
    // The best this ideal can hand on with one more accelerator, or one more CPU.
    root_ = id;
    accel_floor_ = cpu_floor_ = kInf;
    for (int cell = 0; cell < cells_; ++cell) {
      const int c = cell / (k_ + 1), f = cell % (k_ + 1);
      const double v = dp_[Index(id, cell)];
      if (f < k_) accel_floor_ = std::min(accel_floor_, v);
      if (c < static_cast<int>(m_.cpus.size())) cpu_floor_ = std::min(cpu_floor_, v);
    }
    if (accel_floor_ >= ub_ && cpu_floor_ >= ub_) return;
    for (int u = 0; u < m_.num_units; ++u) fixed_[static_cast<size_t>(u)] = l_.Contains(id, u);
    load_.Reset(&fixed_);
    Search(id);
  }

  // Depth-first over the supersets of the root, without recursion (a chain of 100k units is 100k
  // deep). A superset is reached once: after a unit's subtree is done, that unit is excluded from
  // the subtrees of its later siblings. One bitset holds the exclusions of the current path and a
  // log undoes a frame's own exclusions when the frame is left.
  void Search(int root) {
    frames_.clear();
    frames_.push_back({root, 0, excluded_log_.size(), -1});
    while (!frames_.empty()) {
      Frame& f = frames_.back();
      const auto next = l_.Next(f.ideal);
      if (f.next == next.size() || stopped_) {
        for (size_t i = f.log_size; i < excluded_log_.size(); ++i) Exclude(excluded_log_[i], false);
        excluded_log_.resize(f.log_size);
        const int added = f.added;
        frames_.pop_back();
        if (added >= 0) {
          load_.Undo(added);
          if (!frames_.empty()) {
            Exclude(added, true);
            excluded_log_.push_back(added);
          }
        }
        continue;
      }
      const auto [unit, to] = next[f.next++];
      if (excluded_[static_cast<size_t>(unit)]) continue;
      if ((++evaluated_ & 0x3FFF) == 0 && std::chrono::steady_clock::now() > deadline_)
        stopped_ = true;
      if (stopped_) continue;
      load_.Add(unit);
      // The last stage holds the fewest micro-batches (1F1B: one; GPipe: all): the floor (the
      // memory of the tensors crossing the border is not monotone in the set).
      const bool accel =
          load_.not_accel == 0 && k_ > 0 &&
          load_.MemoryFloorAt(m_.FewestInFlight()) <= m_.accel_memory_bytes &&
          std::max(accel_floor_, (load_.FastestAccelS() + load_.fixed_comm) / max_replicas_) < ub_;
      const bool cpu =
          load_.not_cpu == 0 && !m_.cpus.empty() && std::max(cpu_floor_, load_.cpu_s) < ub_;
      if (accel || cpu) {
        if (accel) PushStage(to);
        if (cpu) Push(to, load_.cpu_s, false);
        frames_.push_back({to, 0, excluded_log_.size(), unit});
      } else {
        load_.Undo(unit);
        Exclude(unit, true);
        excluded_log_.push_back(unit);
      }
    }
  }

  // The set as one accelerator's stage, or, choosing replicas, as a stage of each number of
  // consecutive accelerators of one class (its replicas) that divides the micro-batches.
  void PushStage(int next) {
    if (!m_.choose_replicas) {
      Push(next, 0, true);
      return;
    }
    const int full = l_.full_id();
    for (int cell = 0; cell < cells_; ++cell) {
      const int f = cell % (k_ + 1);
      for (int span = 1; span <= f; ++span) {
        if (m_.microbatches % span != 0) continue;
        const int first = f - span;
        if (m_.accel_class[static_cast<size_t>(first)] !=
            m_.accel_class[static_cast<size_t>(f - 1)])
          break;  // a wider span holds accelerators of two classes too
        if (load_.MemoryAt(m_.InFlightOn(first, span)) > m_.MemoryOf(first)) continue;
        const double stage = m_.StageLoad(load_.AccelS(first) + load_.comm, load_.gradient_bytes,
                                          span, m_.replica_link[static_cast<size_t>(first)]);
        const double candidate = std::max(dp_[Index(root_, cell - span)], stage);
        if (candidate < dp_[Index(next, cell)]) {
          dp_[Index(next, cell)] = candidate;
          prev_[Index(next, cell)] = root_;
          how_[Index(next, cell)] = kAccelSet;
          span_[Index(next, cell)] = static_cast<int16_t>(span);
          if (next == full) ub_ = std::min(ub_, candidate);
        }
      }
    }
  }

  void Exclude(int unit, bool on) { excluded_[static_cast<size_t>(unit)] = on ? 1 : 0; }

  // The set on accelerator f - 1 of each cell (its load there: `load` is the CPUs').
  void Push(int next, double load, bool accel) {
    const int full = l_.full_id();
    for (int cell = 0; cell < cells_; ++cell) {
      const int c = cell / (k_ + 1), f = cell % (k_ + 1);
      if (accel ? f == 0 : c == 0) continue;
      // The set is accelerator f of k_: under 1F1B it holds k_ - f + 1 micro-batches (as many as
      // stages from it to the last, counting every accelerator a stage, and every replica of
      // one: a replica holds a share of them).
      if (accel &&
          load_.MemoryAt(m_.InFlightOn(f - 1, m_.accel_replicas[f - 1])) > m_.MemoryOf(f - 1))
        continue;
      const int from = accel ? cell - 1 : cell - (k_ + 1);
      const double candidate = std::max(
          dp_[Index(root_, from)],
          accel ? m_.AccelLoad(load_.AccelS(f - 1) + load_.comm, load_.gradient_bytes, f - 1)
                : load);
      if (candidate < dp_[Index(next, cell)]) {
        dp_[Index(next, cell)] = candidate;
        prev_[Index(next, cell)] = root_;
        how_[Index(next, cell)] = accel ? kAccelSet : kCpuSet;
        if (next == full) ub_ = std::min(ub_, candidate);
      }
    }
  }

  const Deadline deadline_;
  bool stopped_ = false;
  const ContiguousModel& m_;
  const IdealLattice& l_;
  const int k_, cells_;
  double ub_;

 public:
  double initial_ub_ = kInf;

 private:
  UnitSetLoad load_;
  std::vector<char> fixed_;
  std::vector<char> excluded_;     // units excluded on the current search path
  std::vector<int> excluded_log_;  // in order of exclusion, for undoing
  struct Frame {
    int ideal;
    size_t next;      // index into l_.Next(ideal)
    size_t log_size;  // excluded_log_ size when the frame was entered
    int added;        // the unit added to reach this frame (undone when it is left), or -1
  };
  std::vector<Frame> frames_;
  std::vector<double> dp_;
  std::vector<int> prev_;
  std::vector<int8_t> how_;
  std::vector<int16_t> span_;  // choosing replicas: accelerators of the stage a cell's set took
  int max_replicas_ = 1;
  int root_ = 0;
  double accel_floor_ = kInf, cpu_floor_ = kInf;
  int64_t evaluated_ = 0;
};

}  // namespace

Deadline DeadlineAfter(double limit_s) {
  constexpr double kDefaultTimeLimitS = 300;
  return std::chrono::steady_clock::now() +
         std::chrono::duration_cast<std::chrono::steady_clock::duration>(
             std::chrono::duration<double>(limit_s > 0 ? limit_s : kDefaultTimeLimitS));
}

int64_t MaxIdealsInMemory(const ContiguousModel& model) {
  constexpr double kBudgetBytes = 1u << 30;
  const double cells =
      static_cast<double>((model.cpus.size() + 1) * (model.accelerators.size() + 1));
  const double per_ideal = 13 * cells + 8 * std::floor(model.num_units / 64.0 + 1) + 24;
  return static_cast<int64_t>(kBudgetBytes / per_ideal);
}

ContiguousSolution SolveContiguous(const ContiguousModel& model, const IdealLattice& lattice,
                                   double upper_bound, Deadline deadline) {
  if (lattice.size() > MaxIdealsInMemory(model)) return {.complete = false};
  Solver solver(model, lattice, upper_bound, deadline);
  solver.initial_ub_ = upper_bound;
  return solver.Run();
}

namespace {

// Greedy runs of the topological order for a max-load cap: each device in turn (accelerators,
// then CPUs) takes units while its load stays within the cap. Empty when the cap is too small.
std::vector<int> GreedyRuns(const ContiguousModel& m, double cap, UnitSetLoad& run,
                            double* max_load) {
  const int k = static_cast<int>(m.accelerators.size());
  const int devices = k + static_cast<int>(m.cpus.size());
  std::vector<int> device_of(static_cast<size_t>(m.num_units), 0);
  int device = 0, first = 0;  // the open run: units [first, u) on `device`
  *max_load = 0;
  auto close = [&](int end) {
    for (int x = end - 1; x >= first; --x) run.Undo(x);
    first = end;
  };
  run.Reset(nullptr);
  for (int u = 0; u < m.num_units;) {
    if (device == devices) {
      close(u);
      return {};
    }
    const bool accel = device < k;
    run.Add(u);
    const double load =
        accel ? m.AccelLoad(run.AccelS(device) + run.comm, run.gradient_bytes, device) : run.cpu_s;
    const bool fits = accel ? run.not_accel == 0 &&
                                  run.MemoryAt(m.InFlightOn(device, m.accel_replicas[device])) <=
                                      m.MemoryOf(device) &&
                                  load <= cap
                            : run.not_cpu == 0 && load <= cap;
    if (fits) {
      device_of[static_cast<size_t>(u)] = accel ? device : -1 - (device - k);
      *max_load = std::max(*max_load, load);
      ++u;
      continue;
    }
    run.Undo(u);
    close(u);
    ++device;
  }
  close(m.num_units);
  return device_of;
}

}  // namespace

ContiguousSolution SolveChainGreedy(const ContiguousModel& m, Deadline deadline) {
  ContiguousSolution s;
  UnitSetLoad run(m);
  double hi = 0;  // no run's load exceeds every unit's time plus every tensor's transfer
  for (int u = 0; u < m.num_units; ++u) {
    hi += std::max(m.accel_s[static_cast<size_t>(u)], m.cpu_s[static_cast<size_t>(u)]);
    for (const auto& class_s : m.class_accel_s) hi += class_s[static_cast<size_t>(u)];
  }
  for (const auto& t : m.tensors) hi += t.cost;
  double lo = 0, load = 0;
  std::vector<int> best = GreedyRuns(m, hi, run, &load);
  if (best.empty()) return s;  // some unit fits no device
  double best_load = load;
  for (int i = 0; i < 64 && hi - lo > 1e-6 * hi; ++i) {
    if (std::chrono::steady_clock::now() > deadline) break;
    const double cap = (lo + hi) / 2;
    std::vector<int> runs = GreedyRuns(m, cap, run, &load);
    if (runs.empty()) {
      lo = cap;
    } else {
      hi = cap;
      if (load < best_load) {
        best_load = load;
        best = std::move(runs);
      }
    }
  }
  s.found = true;
  s.max_load = best_load;
  s.unit_device = std::move(best);
  return s;
}

ContiguousSolution SolveLinear(const ContiguousModel& model, Deadline deadline) {
  const ContiguousSolution greedy = SolveChainGreedy(model, deadline);
  ContiguousSolution exact = SolveContiguous(model, IdealLattice::Chain(model.num_units),
                                             greedy.found ? greedy.max_load : kInf, deadline);
  if (exact.found || !greedy.found) return exact;
  ContiguousSolution s = greedy;  // the DP found nothing better
  s.sets_evaluated = exact.sets_evaluated;
  s.complete = exact.complete;
  return s;
}

ContiguousSolution SolveLinearLatency(const ContiguousModel& m, Deadline deadline) {
  if (m.Heterogeneous()) return {};  // its calls run on the first class's accelerators
  const int n = m.num_units;
  const int k = static_cast<int>(m.accelerators.size());
  const bool pool = !m.cpus.empty();
  if (static_cast<double>(n + 1) * (k + 1) > 5e7) return {};  // tables over 1 GB: not attempted
  // best[i][j]: least sum over runs covering units [0, i) with j accelerators; from[i][j]: where
  // the last run starts, and whether it is a call (1) or CPU work (0).
  std::vector<std::vector<double>> best(static_cast<size_t>(n + 1),
                                        std::vector<double>(static_cast<size_t>(k + 1), kInf));
  std::vector<std::vector<std::pair<int, char>>> from(
      static_cast<size_t>(n + 1), std::vector<std::pair<int, char>>(static_cast<size_t>(k + 1)));
  best[0][0] = 0;
  UnitSetLoad run(m);
  std::vector<double> path(static_cast<size_t>(n), 0);  // CPU critical path ending at each unit
  for (int h = 0; h < n; ++h) {
    if (std::chrono::steady_clock::now() > deadline) return {};  // found = false
    run.Reset(nullptr);
    double critical = 0;
    for (int i = h; i < n; ++i) {
      run.Add(i);
      double ready = 0;
      for (int p : m.preds[static_cast<size_t>(i)]) {
        if (p >= h) ready = std::max(ready, path[static_cast<size_t>(p)]);
      }
      path[static_cast<size_t>(i)] = ready + m.cpu_s[static_cast<size_t>(i)];
      critical = std::max(critical, path[static_cast<size_t>(i)]);
      const bool call_fits =
          run.not_accel == 0 && run.MemoryAt(m.FewestInFlight()) <= m.accel_memory_bytes;
      for (int j = 0; j <= k; ++j) {
        const double before = best[static_cast<size_t>(h)][static_cast<size_t>(j)];
        if (before == kInf) continue;
        auto relax = [&](int jj, double value, char call) {
          double& slot = best[static_cast<size_t>(i) + 1][static_cast<size_t>(jj)];
          if (value < slot) {
            slot = value;
            from[static_cast<size_t>(i) + 1][static_cast<size_t>(jj)] = {h, call};
          }
        };
        if (pool && run.not_cpu == 0) relax(j, before + critical, 0);
        if (j < k && call_fits) relax(j + 1, before + run.accel_s + run.comm, 1);
      }
    }
  }
  ContiguousSolution s;
  int j_best = -1;
  for (int j = 0; j <= k; ++j) {
    if (best[static_cast<size_t>(n)][static_cast<size_t>(j)] < kInf &&
        (j_best < 0 || best[static_cast<size_t>(n)][static_cast<size_t>(j)] <
                           best[static_cast<size_t>(n)][static_cast<size_t>(j_best)])) {
      j_best = j;
    }
  }
  if (j_best < 0) return s;
  s.found = true;
  s.max_load = best[static_cast<size_t>(n)][static_cast<size_t>(j_best)];
  s.unit_device.assign(static_cast<size_t>(n), -1);
  for (int i = n, j = j_best, next_accel = j_best - 1; i > 0;) {
    const auto [h, call] = from[static_cast<size_t>(i)][static_cast<size_t>(j)];
    for (int u = h; u < i; ++u) s.unit_device[static_cast<size_t>(u)] = call ? next_accel : -1;
    if (call) {
      --next_accel;
      --j;
    }
    i = h;
  }
  return s;
}

sim::Placement ToPlacement(const ContiguousModel& model, const ContiguousSolution& solution,
                           int num_ops) {
  sim::Placement placement(static_cast<size_t>(num_ops), sim::DeviceId(0));
  for (int u = 0; u < model.num_units; ++u) {
    const int d = solution.unit_device[static_cast<size_t>(u)];
    const sim::DeviceId device = d >= 0 ? model.accelerators[static_cast<size_t>(d)]
                                        : model.cpus[static_cast<size_t>(-1 - d)];
    for (sim::OpId op : model.unit_ops[static_cast<size_t>(u)]) placement[op] = device;
  }
  return placement;
}

sim::Placement NoSplitFits(const ContiguousModel& model, int num_ops) {
  const sim::DeviceId d = model.accelerators.empty() ? model.cpus[0] : model.accelerators[0];
  return sim::Placement(static_cast<size_t>(num_ops), d);
}

}  // namespace dplace::place
