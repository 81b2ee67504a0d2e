#include "dplace/place/exact/contiguous_dp.h"

#include <algorithm>
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
        excluded_(static_cast<size_t>(m.num_units + 1) * static_cast<size_t>(l.words()), 0) {
    dp_.assign(static_cast<size_t>(l.size()) * static_cast<size_t>(cells_), kInf);
    prev_.assign(dp_.size(), -1);
    how_.assign(dp_.size(), kUnset);
    for (int cell = 0; cell < cells_; ++cell) dp_[static_cast<size_t>(cell)] = 0;
  }

  ContiguousSolution Run() {
    const int full = l_.full_id();
    for (int id = 0; id < l_.size() && !stopped_; ++id) {
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
      const int device = how == kAccelSet ? f - 1 : -1 - (c - 1);
      for (int u = 0; u < m_.num_units; ++u) {
        if (l_.Contains(id, u) && !l_.Contains(from, u))
          s.unit_device[static_cast<size_t>(u)] = device;
      }
      cell = how == kAccelSet ? cell - 1 : cell - (k_ + 1);
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
    std::fill(excluded_.begin(), excluded_.begin() + l_.words(), 0);
    Search(id, 0);
  }

  void Search(int ideal, int depth) {
    const auto w = static_cast<size_t>(l_.words());
    uint64_t* excluded = excluded_.data() + static_cast<size_t>(depth) * w;
    for (const auto& [unit, next] : l_.Next(ideal)) {
      if ((excluded[unit / 64] >> (unit % 64)) & 1u) continue;
      if ((++evaluated_ & 0x3FFF) == 0 && std::chrono::steady_clock::now() > deadline_)
        stopped_ = true;
      if (stopped_) return;
      load_.Add(unit);
      const bool accel = load_.not_accel == 0 && k_ > 0 && load_.bytes <= m_.accel_memory_bytes &&
                         std::max(accel_floor_, load_.accel_s + load_.fixed_comm) < ub_;
      const bool cpu =
          load_.not_cpu == 0 && !m_.cpus.empty() && std::max(cpu_floor_, load_.cpu_s) < ub_;
      if (accel || cpu) {
        if (accel) Push(next, load_.accel_s + load_.comm, true);
        if (cpu) Push(next, load_.cpu_s, false);
        std::copy(excluded, excluded + w, excluded + w);
        Search(next, depth + 1);
      }
      load_.Undo(unit);
      excluded[unit / 64] |= uint64_t{1} << (unit % 64);
    }
  }

  void Push(int next, double load, bool accel) {
    const int full = l_.full_id();
    for (int cell = 0; cell < cells_; ++cell) {
      const int c = cell / (k_ + 1), f = cell % (k_ + 1);
      if (accel ? f == 0 : c == 0) continue;
      const int from = accel ? cell - 1 : cell - (k_ + 1);
      const double candidate = std::max(dp_[Index(root_, from)], load);
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
  std::vector<uint64_t> excluded_;  // one bitset per search depth
  std::vector<double> dp_;
  std::vector<int> prev_;
  std::vector<int8_t> how_;
  int root_ = 0;
  double accel_floor_ = kInf, cpu_floor_ = kInf;
  int64_t evaluated_ = 0;
};

}  // namespace

ContiguousSolution SolveContiguous(const ContiguousModel& model, const IdealLattice& lattice,
                                   double upper_bound, Deadline deadline) {
  Solver solver(model, lattice, upper_bound, deadline);
  solver.initial_ub_ = upper_bound;
  return solver.Run();
}

ContiguousSolution SolveLinearLatency(const ContiguousModel& m) {
  const int n = m.num_units;
  const int k = static_cast<int>(m.accelerators.size());
  const bool pool = !m.cpus.empty();
  constexpr double kInf = std::numeric_limits<double>::infinity();
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
      const bool call_fits = run.not_accel == 0 && run.bytes <= m.accel_memory_bytes;
      for (int j = 0; j <= k; ++j) {
        const double before = best[static_cast<size_t>(h)][static_cast<size_t>(j)];
        if (before == kInf) continue;
        auto relax = [&](int jj, double value, char call) {
          double& slot = best[static_cast<size_t>(i + 1)][static_cast<size_t>(jj)];
          if (value < slot) {
            slot = value;
            from[static_cast<size_t>(i + 1)][static_cast<size_t>(jj)] = {h, call};
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
  sim::Placement placement(static_cast<size_t>(num_ops), 0);
  for (int u = 0; u < model.num_units; ++u) {
    const int d = solution.unit_device[static_cast<size_t>(u)];
    const sim::DeviceId device = d >= 0 ? model.accelerators[static_cast<size_t>(d)]
                                        : model.cpus[static_cast<size_t>(-1 - d)];
    for (sim::OpId op : model.unit_ops[static_cast<size_t>(u)])
      placement[static_cast<size_t>(op)] = device;
  }
  return placement;
}

sim::Placement NoSplitFits(const ContiguousModel& model, int num_ops) {
  const sim::DeviceId d = model.accelerators.empty() ? model.cpus[0] : model.accelerators[0];
  return sim::Placement(static_cast<size_t>(num_ops), d);
}

}  // namespace dplace::place
