#include "dplace/learn/env.h"

#include <algorithm>
#include <cmath>

#include "dplace/base/hash.h"

namespace dplace::learn {

using place::UnitId;
using sim::DeviceId;
using sim::OpId;

UnitDag MakeUnitDag(const sim::Problem& problem, const place::Units& units) {
  const graph::Graph& g = problem.g();
  sim::PerOp<UnitId> unit_of(g.num_ops(), UnitId(0));
  for (UnitId u : units.ids()) {
    for (OpId op : units[u].ops) unit_of[op] = u;
  }
  // Bytes per (u, v), u before v: every tensor of u counted once per consuming unit.
  std::vector<std::vector<std::pair<int32_t, double>>> in(units.size());
  for (graph::TensorId t : g.tensor_ids()) {
    const UnitId from = unit_of[g.tensor(t).producer];
    std::vector<UnitId> seen;
    for (OpId c : g.Consumers(t)) {
      const UnitId to = unit_of[c];
      if (to <= from || std::find(seen.begin(), seen.end(), to) != seen.end()) continue;
      seen.push_back(to);
      in[to.index()].emplace_back(from.value(), g.tensor(t).bytes);
    }
  }
  UnitDag dag;
  dag.num_nodes = static_cast<int>(units.size());
  for (UnitId u : units.ids()) {
    OpId heaviest = units[u].ops.front();
    for (OpId op : units[u].ops) {
      if (g.op(op).flops > g.op(heaviest).flops) heaviest = op;
    }
    dag.type.push_back(static_cast<int32_t>(Fnv1a32(g.op(heaviest).type) % kOpTypes));
  }
  std::vector<std::vector<int32_t>> out(units.size());
  dag.pred_offsets.push_back(0);
  for (size_t v = 0; v < in.size(); ++v) {
    std::sort(in[v].begin(), in[v].end());
    for (size_t i = 0; i < in[v].size(); ++i) {
      if (i > 0 && in[v][i].first == in[v][i - 1].first) {
        dag.edge_bytes.back() += in[v][i].second;
        continue;
      }
      dag.preds.push_back(in[v][i].first);
      dag.edge_bytes.push_back(in[v][i].second);
      out[static_cast<size_t>(in[v][i].first)].push_back(static_cast<int32_t>(v));
    }
    dag.pred_offsets.push_back(static_cast<int32_t>(dag.preds.size()));
  }
  dag.succ_offsets.push_back(0);
  for (const auto& s : out) {
    dag.succs.insert(dag.succs.end(), s.begin(), s.end());
    dag.succ_offsets.push_back(static_cast<int32_t>(dag.succs.size()));
  }
  return dag;
}

namespace {

// Nodes reachable from `from` along `offsets`/`edges` (not `from` itself), ascending.
std::vector<int32_t> Reach(int32_t from, const std::vector<int32_t>& offsets,
                           const std::vector<int32_t>& edges, std::vector<char>* mark) {
  std::vector<int32_t> found, stack = {from};
  while (!stack.empty()) {
    const int32_t v = stack.back();
    stack.pop_back();
    const auto v_index = static_cast<size_t>(v);
    for (int32_t i = offsets[v_index]; i < offsets[v_index + 1]; ++i) {
      const int32_t w = edges[static_cast<size_t>(i)];
      if ((*mark)[static_cast<size_t>(w)]) continue;
      (*mark)[static_cast<size_t>(w)] = 1;
      found.push_back(w);
      stack.push_back(w);
    }
  }
  std::sort(found.begin(), found.end());
  return found;
}

float Clip(double x, double hi) { return static_cast<float>(std::clamp(x, 0.0, hi)); }

}  // namespace

PlacementEnv::PlacementEnv(const sim::Problem& problem, sim::Evaluator& evaluator,
                           EnvOptions options)
    : PlacementEnv(problem, evaluator, place::MakeUnits(problem), options) {}

PlacementEnv::PlacementEnv(const sim::Problem& problem, sim::Evaluator& evaluator,
                           place::Units units, EnvOptions options)
    : problem_(problem),
      evaluator_(evaluator),
      options_(options),
      units_(std::move(units)),
      dag_(MakeUnitDag(problem, units_)) {
  fastest_s_.assign(units_.size(), 0);
  out_bytes_.assign(units_.size(), 0);
  for (UnitId u : units_.ids()) {
    for (OpId op : units_[u].ops) {
      fastest_s_[u] += problem.costs.MinOpTime(
          op, problem.num_devices(), [&](OpId o, DeviceId d) { return problem.Allowed(o, d); });
    }
    max_fastest_s_ = std::max(max_fastest_s_, fastest_s_[u]);
    max_footprint_ = std::max(max_footprint_, units_[u].footprint_bytes);
  }
  for (int32_t v = 0; v < dag_.num_nodes; ++v) {
    const auto vi = static_cast<size_t>(v);
    for (int32_t i = dag_.pred_offsets[vi]; i < dag_.pred_offsets[vi + 1]; ++i) {
      out_bytes_[UnitId(dag_.preds[static_cast<size_t>(i)])] +=
          dag_.edge_bytes[static_cast<size_t>(i)];
    }
  }
  for (double b : out_bytes_) max_out_bytes_ = std::max(max_out_bytes_, b);
}

double PlacementEnv::CostOf(const sim::Evaluation& e) const {
  const double scale = problem_.LowerBound() > 0 ? problem_.LowerBound() : 1.0;
  double over = 0, capacity = 0;
  for (const sim::DeviceReport& d : e.devices) {
    if (!std::isfinite(d.memory_capacity_bytes)) continue;
    capacity += d.memory_capacity_bytes;
    over += std::max(0.0, d.peak_memory_bytes - d.memory_capacity_bytes);
  }
  const double overflow = capacity > 0 ? over / capacity : 0;
  return e.value / scale * (1 + 4 * overflow) + (e.feasible ? 0 : 1);
}

void PlacementEnv::Reset(const sim::Placement& start) {
  placement_ = start;
  device_.assign(units_.size(), DeviceId(0));
  std::vector<int> ops_on(static_cast<size_t>(problem_.num_devices()), 0);
  for (UnitId u : units_.ids()) {  // the device most of its ops are on, the first op's on a tie
    std::fill(ops_on.begin(), ops_on.end(), 0);
    for (OpId op : units_[u].ops) ++ops_on[start[op].index()];
    device_[u] = start[units_[u].ops.front()];
    for (DeviceId d{0}; d < problem_.num_devices(); ++d) {
      if (ops_on[d.index()] > ops_on[device_[u].index()]) device_[u] = d;
    }
  }
  unit_bytes_on_.assign(problem_.num_devices(), 0);
  units_on_.assign(problem_.num_devices(), 0);
  for (UnitId u : units_.ids()) {
    unit_bytes_on_[device_[u]] += units_[u].footprint_bytes;
    units_on_[device_[u]] += 1;
  }
  step_ = 0;
  since_refresh_ = 0;
  if (options_.reuse_start && !start_.placement.empty() && start_.placement == start) {
    evaluation_ = start_.evaluation;
    cost_ = start_.cost;
    makespan_ = start_.makespan;
    start_s_ = start_.start_s;
    end_s_ = start_.end_s;
    critical_ = start_.critical;
    changed_ = false;
    return;
  }
  Evaluate();
  if (options_.reuse_start) {
    start_ = {placement_, evaluation_, cost_, makespan_, start_s_, end_s_, critical_};
  }
}

void PlacementEnv::Evaluate() {
  sim::Timing timing;
  evaluation_ = evaluator_.EvaluateTimed(placement_, &timing);
  ReadTiming(timing);
  cost_ = CostOf(evaluation_);
  const place::Score score = place::ScoreOf(evaluation_);
  if (best_.empty() || score < best_score_) {
    best_ = placement_;
    best_score_ = score;
  }
  since_refresh_ = 0;
  changed_ = false;
}

void PlacementEnv::ReadTiming(const sim::Timing& timing) {
  start_s_.assign(units_.size(), 0);
  end_s_.assign(units_.size(), 0);
  critical_.assign(units_.size(), 0);
  makespan_ = timing.makespan_s;
  if (timing.start_s.empty()) return;
  sim::PerOp<UnitId> unit_of(problem_.num_ops(), UnitId(0));
  for (UnitId u : units_.ids()) {
    double s = std::numeric_limits<double>::infinity(), e = 0;
    for (OpId op : units_[u].ops) {
      unit_of[op] = u;
      s = std::min(s, timing.start_s[op]);
      e = std::max(e, timing.end_s[op]);
    }
    start_s_[u] = s;
    end_s_[u] = e;
  }
  for (OpId op : timing.critical_path) critical_[unit_of[op]] = 1;
}

void PlacementEnv::Observe(Observation* out, View view) const {
  const auto n = static_cast<size_t>(dag_.num_nodes);
  const UnitId c = Current();
  const DeviceId cur_device = device_[c];
  const sim::PerDevice<sim::DeviceReport>& reports = evaluation_.devices;
  const double span = makespan_ > 0 ? makespan_ : 1;
  auto busy = [&](DeviceId d) {
    return reports.size() > static_cast<size_t>(d.index()) ? reports[d].busy_s / span : 0.0;
  };
  auto memory = [&](DeviceId d) {
    if (reports.size() <= static_cast<size_t>(d.index())) return 0.0;
    const sim::DeviceReport& r = reports[d];
    return std::isfinite(r.memory_capacity_bytes) && r.memory_capacity_bytes > 0
               ? r.peak_memory_bytes / r.memory_capacity_bytes
               : 0.0;
  };
  out->current = c.value();
  const bool all = view == View::kAll;
  out->nodes.assign(all ? n * kNodeFeatures : 0, 0.0f);
  for (UnitId u : units_.ids()) {
    if (!all) break;
    float* f = out->nodes.data() + u.index() * kNodeFeatures;
    const DeviceId d = device_[u];
    double here = 0;
    for (OpId op : units_[u].ops) here += problem_.costs.OpTime(op, d);
    f[0] = Clip(max_fastest_s_ > 0 ? fastest_s_[u] / max_fastest_s_ : 0, 1);
    f[1] = Clip(here > 0 ? fastest_s_[u] / here : 1, 1);
    f[2] = Clip(max_out_bytes_ > 0 ? out_bytes_[u] / max_out_bytes_ : 0, 1);
    f[3] = Clip(max_footprint_ > 0 ? units_[u].footprint_bytes / max_footprint_ : 0, 1);
    f[4] = static_cast<float>(std::clamp((start_s_[u] - start_s_[c]) / span, -1.0, 1.0));
    f[5] = static_cast<float>(std::clamp((end_s_[u] - start_s_[c]) / span, -1.0, 1.0));
    f[6] = critical_[u] ? 1.0f : 0.0f;
    f[7] = u < c ? 1.0f : 0.0f;
    f[8] = u == c ? 1.0f : 0.0f;
    f[9] = d == cur_device ? 1.0f : 0.0f;
    f[10] = Clip(busy(d), 1);
    f[11] = Clip(memory(d), 2);
  }
  // Devices, for the current unit.
  const int num_devices = problem_.num_devices();
  sim::PerDevice<double> static_bytes = unit_bytes_on_, units_on = units_on_,
                         in_bytes(num_devices, 0), out_bytes(num_devices, 0);
  static_bytes[cur_device] -= units_[c].footprint_bytes;  // the other units'
  units_on[cur_device] -= 1;
  double in_total = 0, out_total = 0;
  const size_t ci = c.index();
  for (int32_t i = dag_.pred_offsets[ci]; i < dag_.pred_offsets[ci + 1]; ++i) {
    const auto e = static_cast<size_t>(i);
    in_bytes[device_[UnitId(dag_.preds[e])]] += dag_.edge_bytes[e];
    in_total += dag_.edge_bytes[e];
  }
  for (int32_t i = dag_.succ_offsets[ci]; i < dag_.succ_offsets[ci + 1]; ++i) {
    const auto w = static_cast<size_t>(dag_.succs[static_cast<size_t>(i)]);
    // The bytes c sends w: w's pred entry for c.
    for (int32_t k = dag_.pred_offsets[w]; k < dag_.pred_offsets[w + 1]; ++k) {
      if (dag_.preds[static_cast<size_t>(k)] != c.value()) continue;
      out_bytes[device_[UnitId(static_cast<int32_t>(w))]] +=
          dag_.edge_bytes[static_cast<size_t>(k)];
      out_total += dag_.edge_bytes[static_cast<size_t>(k)];
    }
  }
  out->devices.assign(static_cast<size_t>(num_devices) * kDeviceFeatures, 0.0f);
  out->allowed.assign(static_cast<size_t>(num_devices), 0);
  for (DeviceId d : units_[c].devices) out->allowed[d.index()] = 1;
  for (DeviceId d{0}; d < num_devices; ++d) {
    float* f = out->devices.data() + d.index() * kDeviceFeatures;
    double here = 0;
    for (OpId op : units_[c].ops) here += problem_.costs.OpTime(op, d);
    const double capacity = problem_.c().devices()[d].memory_bytes;
    f[0] = d == cur_device ? 1.0f : 0.0f;
    f[1] = Clip(busy(d), 1);
    f[2] = Clip(memory(d), 2);
    f[3] = std::isfinite(capacity) && capacity > 0
               ? Clip((static_bytes[d] + units_[c].footprint_bytes) / capacity, 2)
               : 0.0f;
    f[4] = Clip(here > 0 ? fastest_s_[c] / here : 1, 1);
    f[5] = Clip(in_total > 0 ? in_bytes[d] / in_total : 0, 1);
    f[6] = Clip(out_total > 0 ? out_bytes[d] / out_total : 0, 1);
    f[7] = Clip(units_on[d] / static_cast<double>(units_.size()), 1);
  }
  out->ancestors.clear();
  out->descendants.clear();
  out->parallel.clear();
  if (!all) return;
  // Ancestors, descendants, and the parallel units nearest in start time.
  std::vector<char> mark(n, 0);
  out->ancestors = Reach(c.value(), dag_.pred_offsets, dag_.preds, &mark);
  out->descendants = Reach(c.value(), dag_.succ_offsets, dag_.succs, &mark);
  mark[ci] = 1;
  std::vector<std::pair<double, int32_t>> parallel;
  for (size_t v = 0; v < n; ++v) {
    if (mark[v]) continue;
    const auto u = UnitId(static_cast<int32_t>(v));
    parallel.emplace_back(std::abs(start_s_[u] - start_s_[c]), u.value());
  }
  const size_t k = std::min(parallel.size(), static_cast<size_t>(options_.parallel_nodes));
  std::partial_sort(parallel.begin(), parallel.begin() + static_cast<std::ptrdiff_t>(k),
                    parallel.end());
  out->parallel.clear();
  for (size_t i = 0; i < k; ++i) out->parallel.push_back(parallel[i].second);
  std::sort(out->parallel.begin(), out->parallel.end());
}

double PlacementEnv::Step(DeviceId d) {
  const UnitId c = Current();
  if (device_[c] != d) {
    unit_bytes_on_[device_[c]] -= units_[c].footprint_bytes;
    units_on_[device_[c]] -= 1;
    unit_bytes_on_[d] += units_[c].footprint_bytes;
    units_on_[d] += 1;
    device_[c] = d;
    place::Assign(units_[c], d, &placement_);
    changed_ = true;
  }
  ++step_;
  ++since_refresh_;
  const bool last = Done();
  if (!(changed_ && (since_refresh_ >= options_.refresh_every || last))) {
    if (last && !changed_) since_refresh_ = 0;
    return 0;
  }
  const double before = cost_;
  Evaluate();
  return before - cost_;
}

StatusOr<place::Units> PolicyUnits(const sim::Problem& problem, int max_units, bool* coarsened) {
  place::Units units = place::MakeUnits(problem);
  if (coarsened != nullptr) *coarsened = static_cast<int>(units.size()) > max_units;
  if (static_cast<int>(units.size()) <= max_units) return units;
  DPLACE_ASSIGN_OR_RETURN(place::Coarsening c, place::Coarsen(problem, {.target_ops = max_units}));
  // An op's label: the co-location unit of the coarse graph its coarse op lies in.
  sim::PerOp<int32_t> coarse_unit(c.problem->num_ops(), 0);
  const place::Units coarse = place::MakeUnits(*c.problem);
  for (UnitId u : coarse.ids()) {
    for (OpId op : coarse[u].ops) coarse_unit[op] = u.value();
  }
  sim::PerOp<int32_t> label(problem.num_ops(), 0);
  for (OpId op : label.ids()) label[op] = coarse_unit[c.coarse_of[op]];
  return place::MakeUnits(problem, label);
}

sim::Placement FastestStart(const sim::Problem& problem, const place::Units& units) {
  sim::Placement p(problem.num_ops(), DeviceId(0));
  sim::PerDevice<double> used(problem.num_devices(), 0);
  for (const place::Unit& u : units) {
    place::Assign(u, place::FirstFit(problem, u, place::FastestFirst(problem, u), &used), &p);
  }
  return p;
}

}  // namespace dplace::learn
