// `ilp`: the non-contiguous max-load integer program of Tarnawski et al., NeurIPS 2020, solved with
// CBC instead of a commercial solver. Variables: x[u][d] (unit u on device d), for each tensor and
// accelerator whether it sends / receives it, and the max-load L:
//   Σ_d x[u][d] = 1;  memory Σ_u bytes_u x[u][d] <= capacity (accelerators);
//   recv[t][d] >= x[c][d] - x[p][d],  send[t][d] >= x[p][d] - x[c][d]  for each consumer unit c;
//   L >= Σ_u time_u x[u][d] + Σ_t cost_t (send[t][d] + recv[t][d])  (accelerators; CPUs: time
//   only); minimise L.
// Identical devices are interchangeable, so unit u may only use device indices <= u (symmetry
// breaking). The search starts from the linear-order optimum (`pipedream`), stops at --time-limit
// (default 60 s) or after a number of branch-and-bound nodes (the evaluation budget, default
// 100,000; a node limit is reproducible, a time limit is not) and reports its proven bound.
#include <algorithm>
#include <cstdio>
#include <limits>

#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/exact/milp.h"

namespace dplace::place {
namespace {

constexpr double kDefaultTimeLimitS = 60;
constexpr int64_t kDefaultMaxNodes = 100000;  // the evaluation budget overrides it

struct MaxLoadMilp {
  Milp milp;
  std::vector<std::vector<int>> x;  // [unit][device slot]: column or -1 (not allowed)
  int load = -1;
  std::vector<sim::DeviceId> devices;  // slot -> device: accelerators then CPUs
};

// indicator >= x[plus] - x[minus], for the columns that exist (-1: the variable is fixed at 0, so
// the row is void when `plus` is missing).
void AddAtLeastDifference(int indicator, int plus, int minus, Milp* milp) {
  if (plus < 0) return;
  std::vector<int> cols = {indicator, plus};
  std::vector<double> coefs = {1, -1};
  if (minus >= 0) {
    cols.push_back(minus);
    coefs.push_back(1);
  }
  milp->AddRow(std::move(cols), std::move(coefs), 'G', 0);
}

MaxLoadMilp BuildMilp(const ContiguousModel& m) {
  MaxLoadMilp out;
  Milp& milp = out.milp;
  const int k = static_cast<int>(m.accelerators.size());
  const int l = static_cast<int>(m.cpus.size());
  out.devices = m.accelerators;
  out.devices.insert(out.devices.end(), m.cpus.begin(), m.cpus.end());
  const int slots = k + l;
  out.load = milp.AddColumn(0, std::numeric_limits<double>::infinity(), 1, false);
  out.x.assign(static_cast<size_t>(m.num_units), std::vector<int>(static_cast<size_t>(slots), -1));
  for (int u = 0; u < m.num_units; ++u) {
    std::vector<int> cols;
    for (int s = 0; s < slots; ++s) {
      const bool accel = s < k;
      const int index = accel ? s : s - k;  // symmetry breaking: index <= u
      if (index > u || !(accel ? m.accel_ok : m.cpu_ok)[static_cast<size_t>(u)]) continue;
      if (accel && m.bytes[static_cast<size_t>(u)] > m.accel_memory_bytes) continue;
      out.x[static_cast<size_t>(u)][static_cast<size_t>(s)] = milp.AddColumn(0, 1, 0, true);
      cols.push_back(out.x[static_cast<size_t>(u)][static_cast<size_t>(s)]);
    }
    milp.AddRow(cols, std::vector<double>(cols.size(), 1.0), 'E', 1);
  }
  auto x_of = [&](int u, int s) { return out.x[static_cast<size_t>(u)][static_cast<size_t>(s)]; };
  std::vector<std::vector<int>> load_cols(static_cast<size_t>(slots));
  std::vector<std::vector<double>> load_coefs(static_cast<size_t>(slots));
  for (int s = 0; s < slots; ++s) {
    std::vector<int> mem_cols;
    std::vector<double> mem_coefs;
    for (int u = 0; u < m.num_units; ++u) {
      if (x_of(u, s) < 0) continue;
      load_cols[static_cast<size_t>(s)].push_back(x_of(u, s));
      load_coefs[static_cast<size_t>(s)].push_back(s < k ? m.accel_s[static_cast<size_t>(u)]
                                                         : m.cpu_s[static_cast<size_t>(u)]);
      mem_cols.push_back(x_of(u, s));
      mem_coefs.push_back(m.bytes[static_cast<size_t>(u)]);
    }
    if (s < k && m.accel_memory_bytes < std::numeric_limits<double>::infinity() &&
        !mem_cols.empty()) {
      milp.AddRow(mem_cols, mem_coefs, 'L', m.accel_memory_bytes);
    }
  }
  for (const ContiguousModel::Tensor& t : m.tensors) {
    if (t.cost <= 0) continue;
    for (int s = 0; s < k; ++s) {
      const int send = milp.AddColumn(0, 1, 0, false);
      const int recv = milp.AddColumn(0, 1, 0, false);
      load_cols[static_cast<size_t>(s)].push_back(send);
      load_coefs[static_cast<size_t>(s)].push_back(t.cost);
      load_cols[static_cast<size_t>(s)].push_back(recv);
      load_coefs[static_cast<size_t>(s)].push_back(t.cost);
      const int xp = x_of(t.producer, s);
      for (int c : t.consumers) {
        const int xc = x_of(c, s);
        // recv >= x[c] - x[p]; send >= x[p] - x[c] (a missing column is the constant 0).
        AddAtLeastDifference(recv, xc, xp, &milp);
        AddAtLeastDifference(send, xp, xc, &milp);
      }
    }
  }
  for (int s = 0; s < slots; ++s) {
    std::vector<int> cols = load_cols[static_cast<size_t>(s)];
    std::vector<double> coefs = load_coefs[static_cast<size_t>(s)];
    for (double& c : coefs) c = -c;
    cols.push_back(out.load);
    coefs.push_back(1);
    milp.AddRow(cols, coefs, 'G', 0);
  }
  return out;
}

// The integer columns of a placement, devices relabelled in order of first use (the symmetry
// breaking); CBC completes the continuous ones. Empty when the placement is not representable.
std::vector<std::pair<int, double>> StartValues(const ContiguousModel& m, const MaxLoadMilp& model,
                                                const sim::Placement& placement) {
  const int k = static_cast<int>(m.accelerators.size());
  std::vector<int> slot_of_device(placement.size() + model.devices.size() + 1, -1);
  int next_accel = 0, next_cpu = k;
  std::vector<std::pair<int, double>> start;
  for (int u = 0; u < m.num_units; ++u) {
    const sim::DeviceId d = placement[static_cast<size_t>(m.unit_ops[static_cast<size_t>(u)][0])];
    int& slot = slot_of_device[static_cast<size_t>(d)];
    if (slot < 0) {
      const bool accel =
          std::find(m.accelerators.begin(), m.accelerators.end(), d) != m.accelerators.end();
      slot = accel ? next_accel++ : next_cpu++;
    }
    for (size_t s = 0; s < model.devices.size(); ++s) {
      const int col = model.x[static_cast<size_t>(u)][s];
      if (col >= 0) start.emplace_back(col, static_cast<int>(s) == slot ? 1.0 : 0.0);
      if (col < 0 && static_cast<int>(s) == slot) return {};
    }
  }
  return start;
}

class IlpPlacer : public Placer {
 public:
  std::string_view name() const override { return "ilp"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel contiguous, BuildContiguousModel(p));
    const ContiguousSolution linear =
        SolveContiguous(contiguous, IdealLattice::Chain(contiguous.num_units),
                        std::numeric_limits<double>::infinity());
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel m, BuildContiguousModel(p, /*for_contiguity=*/false));
    MaxLoadMilp model = BuildMilp(m);
    MilpOptions options;
    options.time_limit_s =
        ctx.budget.time_limit_s > 0 ? ctx.budget.time_limit_s : kDefaultTimeLimitS;
    options.max_nodes =
        ctx.budget.max_evaluations > 0 ? ctx.budget.max_evaluations : kDefaultMaxNodes;
    sim::Placement start;
    if (linear.found) {
      start = ToPlacement(contiguous, linear, p.num_ops());
      options.start = StartValues(m, model, start);
    }
    DPLACE_ASSIGN_OR_RETURN(MilpResult r, SolveWithCbc(model.milp, options));
    if (r.status == MilpStatus::kInfeasible) {
      ctx.note = "infeasible: no placement fits the devices (proven by CBC)";
      return NoSplitFits(m, p.num_ops());
    }
    ctx.lower_bound = std::max(ctx.lower_bound, r.best_bound);
    if (r.status == MilpStatus::kNoSolution) {
      ctx.note = "no solution within the time limit; bound " + std::to_string(r.best_bound);
      return start.empty() ? NoSplitFits(m, p.num_ops()) : start;
    }
    sim::Placement placement(static_cast<size_t>(p.num_ops()), 0);
    for (int u = 0; u < m.num_units; ++u) {
      int best_slot = 0;
      double best_value = -1;
      for (size_t s = 0; s < model.devices.size(); ++s) {
        const int col = model.x[static_cast<size_t>(u)][s];
        if (col >= 0 && r.values[static_cast<size_t>(col)] > best_value) {
          best_value = r.values[static_cast<size_t>(col)];
          best_slot = static_cast<int>(s);
        }
      }
      for (sim::OpId op : m.unit_ops[static_cast<size_t>(u)]) {
        placement[static_cast<size_t>(op)] = model.devices[static_cast<size_t>(best_slot)];
      }
    }
    // CBC may drop the start (it completes the continuous columns itself); never return worse.
    if (!start.empty()) {
      const sim::Evaluation from_start = ctx.evaluator->Evaluate(start);
      const sim::Evaluation from_cbc = ctx.evaluator->Evaluate(placement);
      if ((from_start.feasible && !from_cbc.feasible) ||
          (from_start.feasible == from_cbc.feasible && from_start.value < from_cbc.value)) {
        placement = start;
        r.objective = from_start.value;
        r.status = MilpStatus::kFeasible;
      }
    }
    char note[160];
    const double gap = r.objective > 0 ? (r.objective - r.best_bound) / r.objective : 0;
    std::snprintf(note, sizeof(note), "%s: max-load %.6g, bound %.6g (gap %.2f%%)",
                  r.status == MilpStatus::kOptimal ? "optimal non-contiguous split" : "time limit",
                  r.objective, r.best_bound, 100 * std::max(0.0, gap));
    ctx.note = note;
    return placement;
  }
};

}  // namespace

std::unique_ptr<Placer> MakeIlpPlacer() { return std::make_unique<IlpPlacer>(); }

}  // namespace dplace::place
