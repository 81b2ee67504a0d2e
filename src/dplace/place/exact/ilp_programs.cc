#include "dplace/place/exact/ilp_programs.h"

#include <algorithm>
#include <limits>
#include <map>

namespace dplace::place {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A binary or continuous column, or a constant where the program fixes the value.
struct Var {
  int col = -1;
  double value = 0;  // when col < 0
};

// A linear expression; AddTo() adds `expr sense rhs` as a row, constants moved to the right.
struct Expr {
  std::map<int, double> terms;
  double constant = 0;

  Expr& Add(Var v, double coef) {
    if (v.col >= 0) {
      terms[v.col] += coef;
    } else {
      constant += coef * v.value;
    }
    return *this;
  }
  Expr& Add(int col, double coef) { return Add(Var{col}, coef); }
  void AddTo(Milp* milp, char sense, double rhs) const {
    std::vector<int> cols;
    std::vector<double> coefs;
    for (const auto& [col, coef] : terms) {
      if (coef == 0) continue;
      cols.push_back(col);
      coefs.push_back(coef);
    }
    if (cols.empty()) return;  // a constant row: the programs only build true ones
    milp->AddRow(std::move(cols), std::move(coefs), sense, rhs - constant);
  }
};

Var Column(int col) { return col >= 0 ? Var{col} : Var{-1, 0}; }

bool IsAccelerator(const ContiguousModel& m, sim::DeviceId d) {
  return std::find(m.accelerators.begin(), m.accelerators.end(), d) != m.accelerators.end();
}

// What unit u holds on a device with `in_flight` micro-batches in flight, by what the problem
// recomputes (ContiguousModel): resident + in_flight x held keeping everything; attention's
// core's outputs of one micro-batch only, recomputing them; one micro-batch in full, recomputing
// everything. Auto counts everything kept: the most, safe.
double UnitMemory(const ContiguousModel& m, int u, double in_flight) {
  const auto x = static_cast<size_t>(u);
  if (!m.pipeline_memory) return m.bytes[x];
  switch (m.recompute) {
    case sim::Recompute::kSelective:
      return m.resident[x] + in_flight * m.held_selective[x] + m.held[x] - m.held_selective[x];
    case sim::Recompute::kFull:
      return m.resident[x] + m.held[x];
    case sim::Recompute::kNone:
    case sim::Recompute::kAuto:
      break;
  }
  return m.resident[x] + in_flight * m.held[x];
}

// The least memory unit u needs on an accelerator: its op sizes, or under a schedule what it
// keeps for the step and for the fewest micro-batches any stage holds (UnitMemory).
double UnitMemoryFloor(const ContiguousModel& m, int u) {
  return UnitMemory(m, u, m.FewestInFlight());
}

bool FitsAccelerator(const ContiguousModel& m, int u) {
  return m.accel_ok[static_cast<size_t>(u)] && UnitMemoryFloor(m, u) <= m.accel_memory_bytes;
}

// The memory of the units on one device (slot or block) as a linear expression, by the problem's
// rule (ContiguousModel): op sizes, Σ bytes_u x_u; or 1F1B with `in_flight` micro-batches,
// Σ UnitMemory_u x_u + in_flight Σ_t (kept_t keep_t + copy_t recv_t) (in_flight + 1 recomputing
// everything: DeviceMemory's `crossing`), where
// new columns keep_t >= x_p (a backward op of the producer's unit keeps t), >= x_p - x_c for a
// forward reader c, >= x_p + x_c - 1 for a backward reader c, and recv_t >= x_c - x_p: what the
// device keeps or sends of t and the copy it receives, as the pipeline simulator counts them.
// `add_x(expr, u, coef)` adds coef x_u. `*largest` is set to the most the expression can be.
template <typename AddX>
Expr DeviceMemory(const ContiguousModel& m, Milp* milp, double in_flight, AddX add_x,
                  double* largest) {
  Expr memory;
  *largest = 0;
  for (int u = 0; u < m.num_units; ++u) {
    const double bytes = UnitMemory(m, u, in_flight);
    add_x(&memory, u, bytes);
    *largest += bytes;
  }
  if (!m.pipeline_memory) return memory;
  // What crosses the device's border: per micro-batch in flight, and recomputing everything, of
  // one more (the micro-batch whose backward runs).
  const double crossing = in_flight + (m.recompute == sim::Recompute::kFull ? 1 : 0);
  for (const ContiguousModel::Tensor& t : m.tensors) {
    if (t.kept_bytes > 0) {
      const int keep = milp->AddColumn(0, 1, 0, false);
      memory.Add(keep, crossing * t.kept_bytes);
      *largest += crossing * t.kept_bytes;
      auto at_least = [&](int c, double coef_c, double rhs) {
        Expr e;
        e.Add(keep, 1);
        add_x(&e, t.producer, -1);
        if (c >= 0) add_x(&e, c, -coef_c);
        e.AddTo(milp, 'G', rhs);
      };
      if (t.producer_keeps) at_least(-1, 0, 0);
      for (size_t k = 0; k < t.consumers.size(); ++k) {
        if (t.consumer_kind[k] & 1) at_least(t.consumers[k], -1, 0);  // keep >= x_p - x_c
        if (t.consumer_kind[k] & 2) at_least(t.consumers[k], 1, -1);  // keep >= x_p + x_c - 1
      }
    }
    if (t.copy_bytes > 0) {
      const int recv = milp->AddColumn(0, 1, 0, false);
      memory.Add(recv, crossing * t.copy_bytes);
      *largest += crossing * t.copy_bytes;
      for (int c : t.consumers) {
        Expr e;  // recv >= x_c - x_p
        e.Add(recv, 1);
        add_x(&e, c, -1);
        add_x(&e, t.producer, 1);
        e.AddTo(milp, 'G', 0);
      }
    }
  }
  return memory;
}

// Programs whose integer columns say which slot (device) each unit goes to: x[u][s], one slot per
// accelerator (identical, so unit u may only use accelerator slots <= u: symmetry breaking), then
// one per CPU or, with `pool_cpus`, one slot for the CPU pool.
class AssignmentProgram : public PlacementProgram {
 public:
  AssignmentProgram(const ContiguousModel& m, bool pool_cpus) : m_(m), pool_cpus_(pool_cpus) {
    slots_ = m.accelerators;
    if (pool_cpus && !m.cpus.empty()) {
      slots_.push_back(m.cpus[0]);
    } else if (!pool_cpus) {
      slots_.insert(slots_.end(), m.cpus.begin(), m.cpus.end());
    }
    const int k = num_accelerators();
    x_.assign(static_cast<size_t>(m.num_units), std::vector<int>(slots_.size(), -1));
    for (int u = 0; u < m.num_units; ++u) {
      Expr once;
      for (int s = 0; s < num_slots(); ++s) {
        const bool accel = s < k;
        const int index = accel ? s : (pool_cpus ? 0 : s - k);
        // Accelerators of different replicas are not alike: no symmetry to break among them.
        if (index > u && (!accel || m.UniformReplicas())) continue;
        if (accel ? !FitsAccelerator(m, u) : !m.cpu_ok[static_cast<size_t>(u)]) continue;
        x_[static_cast<size_t>(u)][static_cast<size_t>(s)] = milp_.AddColumn(0, 1, 0, true);
        once.Add(x(u, s), 1);
      }
      once.AddTo(&milp_, 'E', 1);  // no column: the unit fits nowhere, CBC proves infeasibility
      if (once.terms.empty()) infeasible_ = true;
    }
    // A device holds at most the first of k stages' micro-batches in flight (the slots of a split
    // are in no pipeline order here): safe, exact for that stage.
    for (int s = 0; s < k && m.accel_memory_bytes < kInf; ++s) {
      double largest = 0;
      // Of those, a replica holds its share (ContiguousModel::InFlightOn).
      const int in_flight = m.InFlightOn(0, m.accel_replicas[static_cast<size_t>(s)]);
      const Expr memory = DeviceMemory(
          m, &milp_, in_flight, [&](Expr* e, int u, double coef) { e->Add(x(u, s), coef); },
          &largest);
      memory.AddTo(&milp_, 'L', m.accel_memory_bytes);
    }
    if (infeasible_) {  // an empty equality row cannot be added: say 0 >= 1 with a dummy column
      const int dummy = milp_.AddColumn(0, 0, 0, false);
      milp_.AddRow({dummy}, {1}, 'G', 1);
    }
  }

  std::vector<std::pair<int, double>> StartValues(const sim::Placement& placement) const override {
    const int k = num_accelerators();
    std::map<sim::DeviceId, int> slot_of;
    int next_accel = 0, next_cpu = k;
    std::vector<std::pair<int, double>> start;
    for (int u = 0; u < m_.num_units; ++u) {
      const sim::DeviceId d = placement[sim::OpId(m_.unit_ops[u][0])];
      auto it = slot_of.find(d);
      if (it == slot_of.end()) {
        const int slot = IsAccelerator(m_, d) ? next_accel++ : (pool_cpus_ ? k : next_cpu++);
        it = slot_of.emplace(d, slot).first;
      }
      for (int s = 0; s < num_slots(); ++s) {
        if (x(u, s).col >= 0) start.emplace_back(x(u, s).col, s == it->second ? 1.0 : 0.0);
        if (x(u, s).col < 0 && s == it->second) return {};
      }
    }
    return start;
  }

  sim::Placement Decode(const std::vector<double>& values, int num_ops) const override {
    sim::Placement placement(static_cast<size_t>(num_ops), sim::DeviceId(0));
    for (int u = 0; u < m_.num_units; ++u) {
      int best_slot = 0;
      double best_value = -1;
      for (int s = 0; s < num_slots(); ++s) {
        if (x(u, s).col >= 0 && values[static_cast<size_t>(x(u, s).col)] > best_value) {
          best_value = values[static_cast<size_t>(x(u, s).col)];
          best_slot = s;
        }
      }
      for (sim::OpId op : m_.unit_ops[static_cast<size_t>(u)]) {
        placement[op] = slots_[best_slot];
      }
    }
    return placement;
  }

 protected:
  Var x(int u, int s) const { return Column(x_[static_cast<size_t>(u)][static_cast<size_t>(s)]); }
  int num_accelerators() const { return static_cast<int>(m_.accelerators.size()); }
  int num_slots() const { return static_cast<int>(slots_.size()); }

  // comm >= x[plus] - x[minus] for a new continuous column comm in [0, 1], returned.
  int AtLeastDifference(int comm, Var plus, Var minus) {
    Expr e;
    e.Add(comm, 1).Add(plus, -1).Add(minus, 1);
    e.AddTo(&milp_, 'G', 0);
    return comm;
  }

  const ContiguousModel& m_;
  bool pool_cpus_;
  bool infeasible_ = false;
  std::vector<sim::DeviceId> slots_;
  std::vector<std::vector<int>> x_;  // [unit][slot]: column, or -1 where the unit may not go
};

// min L;  L >= Σ_u time_u x[u][s] + Σ_t cost_t (send[t][s] + recv[t][s])  (accelerators; CPUs pay
// compute only);  recv[t][s] >= x[c][s] - x[p][s],  send[t][s] >= x[p][s] - x[c][s].
class NonContiguousMaxLoadProgram : public AssignmentProgram {
 public:
  explicit NonContiguousMaxLoadProgram(const ContiguousModel& m) : AssignmentProgram(m, false) {
    const int k = num_accelerators();
    const int load = milp_.AddColumn(0, kInf, 1, false);
    std::vector<Expr> loads(static_cast<size_t>(num_slots()));
    // An accelerator of replicas: a share of its units' work and transfers, and its all-reduce
    // (ContiguousModel::ReplicaTerms).
    std::vector<ContiguousModel::ReplicaTerms> terms;
    for (int s = 0; s < k; ++s) terms.push_back(m.AccelTerms(s));
    for (int s = 0; s < num_slots(); ++s) {
      for (int u = 0; u < m.num_units; ++u) {
        const auto i = static_cast<size_t>(u);
        loads[static_cast<size_t>(s)].Add(
            x(u, s), s < k ? terms[static_cast<size_t>(s)].Of(m.accel_s[i], m.gradient_bytes[i]) -
                                 terms[static_cast<size_t>(s)].fixed
                           : m.cpu_s[i]);
      }
      if (s < k) loads[static_cast<size_t>(s)].Add(Var{-1, 1}, terms[static_cast<size_t>(s)].fixed);
    }
    for (const ContiguousModel::Tensor& t : m.tensors) {
      if (t.cost <= 0) continue;
      for (int s = 0; s < k; ++s) {
        const int send = milp_.AddColumn(0, 1, 0, false);
        const int recv = milp_.AddColumn(0, 1, 0, false);
        const double cost = t.cost * terms[static_cast<size_t>(s)].share;
        loads[static_cast<size_t>(s)].Add(send, cost).Add(recv, cost);
        for (int c : t.consumers) {
          AtLeastDifference(recv, x(c, s), x(t.producer, s));
          AtLeastDifference(send, x(t.producer, s), x(c, s));
        }
      }
    }
    for (Expr& e : loads) {
      e.Add(load, -1);
      e.AddTo(&milp_, 'L', 0);
    }
  }
};

// Chain of ideals: y[u][j] = 1 when unit u is in I_j (j = 0..K-1, I_(K-1) = every unit),
// y[u][j] <= y[u][j+1], y[u][j] <= y[p][j] for each predecessor p; unit u is in block j when
// x[u][j] = y[u][j] - y[u][j-1] = 1. a[j] = 1 when block j runs on an accelerator, Σ_j a[j] = k.
// Block loads are enforced with big-M terms on a[j]: accelerator blocks pay compute, memory and
// communication, CPU blocks compute only.
class ContiguousMaxLoadProgram : public PlacementProgram {
 public:
  explicit ContiguousMaxLoadProgram(const ContiguousModel& m) : m_(m) {
    const int k = static_cast<int>(m.accelerators.size());
    blocks_ = k + static_cast<int>(m.cpus.size());
    y_.assign(static_cast<size_t>(m.num_units), std::vector<int>(static_cast<size_t>(blocks_), -1));
    for (int u = 0; u < m.num_units; ++u) {
      for (int j = 0; j + 1 < blocks_; ++j) {
        y_[static_cast<size_t>(u)][static_cast<size_t>(j)] = milp_.AddColumn(0, 1, 0, true);
      }
    }
    Expr accelerators;
    for (int j = 0; j < blocks_; ++j) {
      accel_.push_back(milp_.AddColumn(0, 1, 0, true));
      accelerators.Add(accel_.back(), 1);
    }
    accelerators.AddTo(&milp_, 'E', k);
    for (int u = 0; u < m.num_units; ++u) {
      for (int j = 0; j + 2 < blocks_; ++j)
        Expr().Add(y(u, j), 1).Add(y(u, j + 1), -1).AddTo(&milp_, 'L', 0);
      for (int p : m.preds[static_cast<size_t>(u)]) {
        for (int j = 0; j + 1 < blocks_; ++j)
          Expr().Add(y(u, j), 1).Add(y(p, j), -1).AddTo(&milp_, 'L', 0);
      }
    }
    // Every accelerator of the same replicas (ContiguousMaxLoad's precondition): a share of a
    // block's work and transfers, and its all-reduce (ContiguousModel::ReplicaTerms).
    const ContiguousModel::ReplicaTerms terms =
        k > 0 ? m.AccelTerms(0) : ContiguousModel::ReplicaTerms{};
    double total_accel = 0, total_cpu = 0;
    for (int u = 0; u < m.num_units; ++u) {
      total_accel +=
          terms.Of(m.accel_s[static_cast<size_t>(u)], m.gradient_bytes[static_cast<size_t>(u)]);
      total_cpu += m.cpu_s[static_cast<size_t>(u)];
    }
    double total_comm = 0;
    for (const ContiguousModel::Tensor& t : m.tensors)
      total_comm += 2 * std::max(0.0, t.cost) * terms.share;
    const int load = milp_.AddColumn(0, kInf, 1, false);
    for (int j = 0; j < blocks_; ++j) {
      Expr accel_load, cpu_load;
      for (int u = 0; u < m.num_units; ++u) {
        AddX(&accel_load, u, j,
             terms.Of(m.accel_s[static_cast<size_t>(u)], m.gradient_bytes[static_cast<size_t>(u)]) -
                 terms.fixed);
        AddX(&cpu_load, u, j, m.cpu_s[static_cast<size_t>(u)]);
        // A unit that may not run on one kind forbids that kind to its block.
        if (!FitsAccelerator(m, u)) {
          Expr e;
          AddX(&e, u, j, 1);
          e.Add(accel_[static_cast<size_t>(j)], 1).AddTo(&milp_, 'L', 1);
        }
        if (!m.cpu_ok[static_cast<size_t>(u)]) {
          Expr e;
          AddX(&e, u, j, 1);
          e.Add(accel_[static_cast<size_t>(j)], -1).AddTo(&milp_, 'L', 0);
        }
      }
      for (const ContiguousModel::Tensor& t : m.tensors) {
        if (t.cost <= 0) continue;
        const int send = milp_.AddColumn(0, 1, 0, false);
        const int recv = milp_.AddColumn(0, 1, 0, false);
        accel_load.Add(send, t.cost * terms.share).Add(recv, t.cost * terms.share);
        for (int c : t.consumers) {
          Expr r;  // recv >= x[c][j] - x[p][j]
          r.Add(recv, 1);
          AddX(&r, c, j, -1);
          AddX(&r, t.producer, j, 1);
          r.AddTo(&milp_, 'G', 0);
          Expr s;  // send >= x[p][j] - x[c][j]
          s.Add(send, 1);
          AddX(&s, t.producer, j, -1);
          AddX(&s, c, j, 1);
          s.AddTo(&milp_, 'G', 0);
        }
      }
      // load >= accel_load - M (1 - a[j]);  load >= cpu_load - M a[j].
      accel_load.Add(load, -1).Add(accel_[static_cast<size_t>(j)], total_accel + total_comm);
      accel_load.Add(Var{-1, 1}, terms.fixed);
      accel_load.AddTo(&milp_, 'L', total_accel + total_comm);
      cpu_load.Add(load, -1).Add(accel_[static_cast<size_t>(j)], -total_cpu);
      cpu_load.AddTo(&milp_, 'L', 0);
      if (m.accel_memory_bytes < kInf) {
        // Under 1F1B block j holds at most one micro-batch per block from it to the last, and
        // never more than k (safe; exact when every block runs on an accelerator); another
        // schedule the first of k stages' count.
        const double in_flight = m.schedule == sim::PipelineSchedule::k1F1B
                                     ? std::min(k, blocks_ - j)
                                     : m.InFlightOn(0, k > 0 ? m.accel_replicas[0] : 1);
        double largest = 0;
        Expr memory = DeviceMemory(
            m, &milp_, in_flight, [&](Expr* e, int u, double coef) { AddX(e, u, j, coef); },
            &largest);
        // memory <= capacity when a[j] = 1: memory + M a[j] <= capacity + M.
        memory.Add(accel_[static_cast<size_t>(j)], largest);
        memory.AddTo(&milp_, 'L', m.accel_memory_bytes + largest);
      }
    }
  }

  // Blocks in an order in which no unit depends on a later block; empty when there is none.
  std::vector<std::pair<int, double>> StartValues(const sim::Placement& placement) const override {
    std::map<sim::DeviceId, int> block_of;  // device -> dense index, then -> position in order
    std::vector<sim::DeviceId> devices;
    for (int u = 0; u < m_.num_units; ++u) {
      const sim::DeviceId d = DeviceOf(placement, u);
      if (block_of.emplace(d, static_cast<int>(devices.size())).second) devices.push_back(d);
    }
    const size_t n = devices.size();
    std::vector<std::vector<int>> succ(n);
    std::vector<int> indegree(n, 0);
    for (int u = 0; u < m_.num_units; ++u) {
      for (int p : m_.preds[static_cast<size_t>(u)]) {
        const int a = block_of[DeviceOf(placement, p)], b = block_of[DeviceOf(placement, u)];
        if (a == b) continue;
        succ[static_cast<size_t>(a)].push_back(b);
        ++indegree[static_cast<size_t>(b)];
      }
    }
    std::vector<int> order;
    for (size_t v = 0; v < n; ++v) {
      if (indegree[v] == 0) order.push_back(static_cast<int>(v));
    }
    for (size_t head = 0; head < order.size(); ++head) {
      for (int w : succ[static_cast<size_t>(order[head])]) {
        if (--indegree[static_cast<size_t>(w)] == 0) order.push_back(w);
      }
    }
    if (order.size() != n) return {};
    std::vector<int> position(n);
    std::vector<char> is_accel;
    for (size_t i = 0; i < n; ++i) {
      position[static_cast<size_t>(order[i])] = static_cast<int>(i);
      is_accel.push_back(IsAccelerator(m_, devices[static_cast<size_t>(order[i])]));
    }
    // Pad the unused blocks with the kinds left over.
    int accels_left = static_cast<int>(m_.accelerators.size());
    for (char a : is_accel) accels_left -= a;
    while (static_cast<int>(is_accel.size()) < blocks_) is_accel.push_back(accels_left-- > 0);
    std::vector<std::pair<int, double>> start;
    for (int j = 0; j < blocks_; ++j)
      start.emplace_back(accel_[static_cast<size_t>(j)], is_accel[static_cast<size_t>(j)]);
    for (int u = 0; u < m_.num_units; ++u) {
      const int block = position[static_cast<size_t>(block_of[DeviceOf(placement, u)])];
      for (int j = 0; j + 1 < blocks_; ++j) start.emplace_back(y(u, j).col, block <= j ? 1.0 : 0.0);
    }
    return start;
  }

  sim::Placement Decode(const std::vector<double>& values, int num_ops) const override {
    std::vector<sim::DeviceId> device_of_block;
    size_t next_accel = 0, next_cpu = 0;
    for (int j = 0; j < blocks_; ++j) {
      const bool accel = values[static_cast<size_t>(accel_[static_cast<size_t>(j)])] > 0.5;
      // An accelerator while one is left, else a CPU while one is left, else an accelerator.
      const bool to_cpu =
          !(accel && next_accel < m_.accelerators.size()) && next_cpu < m_.cpus.size();
      device_of_block.push_back(to_cpu ? m_.cpus[next_cpu++] : m_.accelerators[next_accel++]);
    }
    sim::Placement placement(static_cast<size_t>(num_ops), sim::DeviceId(0));
    for (int u = 0; u < m_.num_units; ++u) {
      int block = blocks_ - 1;
      for (int j = 0; j + 1 < blocks_; ++j) {
        if (values[static_cast<size_t>(y(u, j).col)] > 0.5) {
          block = j;
          break;
        }
      }
      for (sim::OpId op : m_.unit_ops[static_cast<size_t>(u)]) {
        placement[op] = device_of_block[block];
      }
    }
    return placement;
  }

 private:
  // y[u][j]: a column for j < K-1, the constant 1 for j = K-1, 0 for j = -1.
  Var y(int u, int j) const {
    if (j < 0) return {-1, 0};
    if (j + 1 >= blocks_) return {-1, 1};
    return {y_[static_cast<size_t>(u)][static_cast<size_t>(j)]};
  }
  void AddX(Expr* e, int u, int j, double coef) const {
    e->Add(y(u, j), coef).Add(y(u, j - 1), -coef);
  }
  sim::DeviceId DeviceOf(const sim::Placement& placement, int u) const {
    return placement[sim::OpId(m_.unit_ops[u][0])];
  }

  const ContiguousModel& m_;
  int blocks_ = 0;
  std::vector<std::vector<int>> y_;
  std::vector<int> accel_;
};

// The latency program over co-location classes x[u][s] (accelerator slots, then the CPU pool):
//   z[o][s] >= x[o][s], z[b][s] <= z[a][s], z[b][s] <= x[b][s] - x[a][s] + 1 for each edge a -> b
//     (each accelerator's ops are contiguous);
//   in[t][s] >= x[c][s] - x[p][s], out[t][s] >= x[p][s] - x[c][s] (tensor t crosses the call);
//   finish[s] = start[s] + Σ_u accel_u x[u][s] + Σ_t cost_t (in[t][s] + out[t][s]);
//   start[s] >= lat[producer of t] - M (1 - in[t][s]);   lat[o] >= finish[s] - M (1 - x[o][s]);
//   lat[b] >= lat[a] + cpu_b x[b][pool] for each edge a -> b, lat[o] >= cpu_o x[o][pool];
//   T >= lat[o]; minimise T. With a known feasible latency V: T <= V and M = V.
class LatencyProgram : public AssignmentProgram {
 public:
  LatencyProgram(const sim::Problem& p, const ContiguousModel& m, double upper_bound)
      : AssignmentProgram(m, true) {
    const graph::Graph& g = p.g();
    const int k = num_accelerators();
    const bool pool = num_slots() > k;
    double big_m = upper_bound;
    if (!(big_m < kInf)) {
      big_m = 0;
      for (int u = 0; u < m.num_units; ++u) {
        big_m += std::max(m.accel_s[static_cast<size_t>(u)], m.cpu_s[static_cast<size_t>(u)]);
      }
      for (const ContiguousModel::Tensor& t : m.tensors) big_m += (k + 1) * std::max(0.0, t.cost);
    }
    auto unit = [&](sim::OpId op) { return m.unit_of_op[op]; };
    auto cpu_time = [&](sim::OpId op) { return pool ? p.costs.OpTime(op, m.cpus[0]) : 0.0; };
    // lat[o] is at least o's earliest finish with every op at its fastest allowed time.
    sim::PerOp<double> earliest(g.ops().size(), 0);
    double critical = 0;
    for (sim::OpId op : g.TopologicalOrder()) {
      double fastest = kInf;
      if (k > 0 && FitsAccelerator(m, unit(op))) fastest = p.costs.OpTime(op, m.accelerators[0]);
      if (pool && m.cpu_ok[static_cast<size_t>(unit(op))])
        fastest = std::min(fastest, cpu_time(op));
      if (!(fastest < kInf)) fastest = 0;
      double ready = 0;
      for (sim::OpId a : g.Predecessors(op)) ready = std::max(ready, earliest[a]);
      earliest[op] = ready + fastest;
      critical = std::max(critical, ready + fastest);
    }
    const int total = milp_.AddColumn(std::min(critical, upper_bound),
                                      upper_bound < kInf ? upper_bound : kInf, 1, false);
    sim::PerOp<int> lat(g.ops().size());
    for (sim::OpId op{0}; op < g.num_ops(); ++op) {
      lat[op] = milp_.AddColumn(earliest[op], kInf, 0, false);
      if (g.Successors(op).empty()) Expr().Add(total, 1).Add(lat[op], -1).AddTo(&milp_, 'G', 0);
    }
    for (sim::OpId b{0}; b < g.num_ops(); ++b) {
      const Var pooled = pool ? x(unit(b), k) : Var{-1, 0};
      Expr().Add(lat[b], 1).Add(pooled, -cpu_time(b)).AddTo(&milp_, 'G', 0);
      for (sim::OpId a : g.Predecessors(b)) {
        Expr().Add(lat[b], 1).Add(lat[a], -1).Add(pooled, -cpu_time(b)).AddTo(&milp_, 'G', 0);
      }
    }
    for (int s = 0; s < k; ++s) {
      // Contiguity.
      sim::PerOp<int> z(g.ops().size());
      for (sim::OpId op{0}; op < g.num_ops(); ++op) {
        z[op] = milp_.AddColumn(0, 1, 0, false);
        Expr().Add(z[op], 1).Add(x(unit(op), s), -1).AddTo(&milp_, 'G', 0);
      }
      for (sim::OpId b{0}; b < g.num_ops(); ++b) {
        for (sim::OpId a : g.Predecessors(b)) {
          if (unit(a) == unit(b)) continue;
          Expr().Add(z[b], 1).Add(z[a], -1).AddTo(&milp_, 'L', 0);
          Expr().Add(z[b], 1).Add(x(unit(b), s), -1).Add(x(unit(a), s), 1).AddTo(&milp_, 'L', 1);
        }
      }
      // The call: start, duration, finish.
      const int start = milp_.AddColumn(0, kInf, 0, false);
      const int finish = milp_.AddColumn(0, kInf, 0, false);
      Expr duration;
      duration.Add(finish, 1).Add(start, -1);
      for (int u = 0; u < m.num_units; ++u)
        duration.Add(x(u, s), -m.accel_s[static_cast<size_t>(u)]);
      for (const ContiguousModel::Tensor& t : m.tensors) {
        const int in = milp_.AddColumn(0, 1, 0, false);
        const int out = milp_.AddColumn(0, 1, 0, false);
        duration.Add(in, -t.cost).Add(out, -t.cost);
        for (int c : t.consumers) {
          AtLeastDifference(in, x(c, s), x(t.producer, s));
          AtLeastDifference(out, x(t.producer, s), x(c, s));
        }
        // start >= lat[producer] - M (1 - in).
        const sim::OpId producer = g.tensor(t.id).producer;
        Expr().Add(start, 1).Add(lat[producer], -1).Add(in, -big_m).AddTo(&milp_, 'G', -big_m);
      }
      duration.AddTo(&milp_, 'E', 0);
      for (sim::OpId op{0}; op < g.num_ops(); ++op) {
        // lat[o] >= finish - M (1 - x[o][s]).
        Expr()
            .Add(lat[op], 1)
            .Add(finish, -1)
            .Add(x(unit(op), s), -big_m)
            .AddTo(&milp_, 'G', -big_m);
      }
    }
  }
};

}  // namespace

std::unique_ptr<PlacementProgram> NonContiguousMaxLoad(const ContiguousModel& m) {
  return std::make_unique<NonContiguousMaxLoadProgram>(m);
}

std::unique_ptr<PlacementProgram> ContiguousMaxLoad(const ContiguousModel& m) {
  return std::make_unique<ContiguousMaxLoadProgram>(m);
}

std::unique_ptr<PlacementProgram> Latency(const sim::Problem& p, const ContiguousModel& m,
                                          double upper_bound) {
  return std::make_unique<LatencyProgram>(p, m, upper_bound);
}

}  // namespace dplace::place
