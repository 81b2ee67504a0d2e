#include "dplace/place/coarsen.h"

#include <algorithm>
#include <limits>

#include "dplace/base/union_find.h"
#include "dplace/graph/graph_builder.h"
#include "dplace/place/budget.h"
#include "dplace/place/search/local_search.h"
#include "dplace/sim/constraints.h"
#include "dplace/sim/variants.h"

namespace dplace::place {
namespace {

using graph::OpId;

// A topological order that keeps ops of one key together when it can: among the ready ops it takes
// one with the key of the op it took last, else the op that became ready last. With one key for
// every op it is the depth-first order (Kahn's algorithm with a stack): a successor comes right
// after its producer when it can, so chains and branches come out contiguous.
std::vector<OpId> KeyedTopologicalOrder(const graph::Graph& g, const sim::PerOp<int32_t>& key) {
  const size_t n = g.ops().size();
  if (n == 0) return {};
  sim::PerOp<int32_t> pending(n);
  sim::PerOp<char> taken(n, 0);
  std::vector<OpId> stack;  // ready ops, last ready on top; taken ones are skipped
  std::vector<std::vector<OpId>> ready_by_key(
      static_cast<size_t>(*std::max_element(key.begin(), key.end()) + 1));
  auto make_ready = [&](OpId op) {
    stack.push_back(op);
    ready_by_key[static_cast<size_t>(key[op])].push_back(op);
  };
  for (OpId op(g.num_ops() - 1); op >= 0; --op) {
    pending[op] = static_cast<int32_t>(g.Predecessors(op).size());
    if (pending[op] == 0) make_ready(op);
  }
  std::vector<OpId> order;
  order.reserve(n);
  int32_t current = -1;
  while (order.size() < n) {
    OpId op{-1};
    if (current >= 0) {
      auto& same = ready_by_key[static_cast<size_t>(current)];
      while (!same.empty() && taken[same.back()]) same.pop_back();
      if (!same.empty()) {
        op = same.back();
        same.pop_back();
      }
    }
    while (op < 0) {
      if (!taken[stack.back()]) op = stack.back();
      stack.pop_back();
    }
    taken[op] = 1;
    current = key[op];
    order.push_back(op);
    const auto succs = g.Successors(op);
    for (auto it = succs.rbegin(); it != succs.rend(); ++it) {
      if (--pending[*it] == 0) make_ready(*it);
    }
  }
  return order;
}

// Co-location groups as disjoint sets, with each set's work and footprint.
class GroupSets {
 public:
  GroupSets(const sim::Problem& p, const sim::PerOp<double>& work) : sets_(p.g().groups().size()) {
    const graph::Graph& g = p.g();
    work_.assign(g.groups().size(), 0);
    bytes_.assign(g.groups().size(), 0);
    for (OpId op : g.op_ids()) {
      const graph::GroupId grp = g.op(op).colocation;
      if (grp == graph::kNoGroup) continue;
      work_[grp] += work[op];
      bytes_[grp] += sim::OpFootprintBytes(g, op);
    }
  }
  graph::GroupId Find(graph::GroupId x) { return graph::GroupId(sets_.Find(x.value())); }
  double Work(graph::GroupId root) const { return work_[root]; }
  double Bytes(graph::GroupId root) const { return bytes_[root]; }
  void Join(graph::GroupId a, graph::GroupId b) {
    const auto [root, absorbed] = sets_.Join(a.value(), b.value());
    if (absorbed < 0) return;
    work_[graph::GroupId(root)] += work_[graph::GroupId(absorbed)];
    bytes_[graph::GroupId(root)] += bytes_[graph::GroupId(absorbed)];
  }

 private:
  UnionFind sets_;
  IdVector<graph::GroupId, double> work_, bytes_;
};

struct Intervals {
  sim::PerOp<int32_t> of;  // op -> interval
  int count = 0;
  GroupSets sets;  // the co-location groups intervals joined
};

// Splits a topological order into intervals.
Intervals SplitIntoIntervals(const sim::Problem& p, const CoarsenOptions& options,
                             const std::vector<OpId>& order) {
  const graph::Graph& g = p.g();
  const int n = g.num_ops();
  sim::PerOp<double> work(g.ops().size());
  double total = 0;
  for (OpId op : g.op_ids()) {
    work[op] = p.costs.MinOpTime(op, p.num_devices(),
                                 [&](OpId o, sim::DeviceId d) { return p.Allowed(o, d); });
    total += work[op];
  }
  Intervals out{.of = sim::PerOp<int32_t>(g.ops().size(), -1), .sets = GroupSets(p, work)};
  GroupSets* sets = &out.sets;
  double min_memory = p.c().device(sim::DeviceId(0)).memory_bytes;
  for (sim::DeviceId d{1}; d < p.num_devices(); ++d) {
    min_memory = std::min(min_memory, p.c().device(d).memory_bytes);
  }
  const int target = std::max(1, options.target_ops);
  const double max_work = total / target;
  const double max_bytes = min_memory / 4;
  const int max_ops = std::max(1, 4 * n / target);

  int32_t current = -1;
  double interval_work = 0, interval_bytes = 0;
  int interval_ops = 0;
  uint64_t interval_kinds = 0;
  graph::GroupId interval_group = graph::kNoGroup;  // a member of the interval's groups
  for (OpId op : order) {
    const double w = work[op];
    const double bytes = sim::OpFootprintBytes(g, op);
    const uint64_t kinds = p.allowed_kinds[op];
    const graph::GroupId grp = g.op(op).colocation;
    bool fits = current >= 0 && kinds == interval_kinds && interval_ops < max_ops &&
                interval_work + w <= max_work && interval_bytes + bytes <= max_bytes;
    if (fits && grp != graph::kNoGroup && interval_group != graph::kNoGroup) {
      const graph::GroupId a = sets->Find(grp), b = sets->Find(interval_group);
      fits = a == b || (sets->Work(a) + sets->Work(b) <= max_work &&
                        sets->Bytes(a) + sets->Bytes(b) <= max_bytes);
    }
    if (!fits) {
      ++current;
      interval_work = interval_bytes = 0;
      interval_ops = 0;
      interval_kinds = kinds;
      interval_group = graph::kNoGroup;
    }
    if (grp != graph::kNoGroup) {
      if (interval_group != graph::kNoGroup) sets->Join(grp, interval_group);
      interval_group = grp;
    }
    out.of[op] = current;
    interval_work += w;
    interval_bytes += bytes;
    ++interval_ops;
  }
  out.count = current + 1;
  return out;
}

// Intervals of the depth-first order; then, when co-location groups span the graph (a training
// step: a forward op with its backward and update ops), intervals of an order that keeps the ops
// of one group set together — each op keyed by the first interval its group set reached — which
// lets backward ops fill intervals group by group instead of breaking at every group boundary.
// The split with fewer intervals wins.
Intervals SplitIntoIntervals(const sim::Problem& p, const CoarsenOptions& options) {
  const graph::Graph& g = p.g();
  Intervals first = SplitIntoIntervals(
      p, options, KeyedTopologicalOrder(g, sim::PerOp<int32_t>(g.ops().size(), 0)));
  if (g.groups().empty()) return first;
  IdVector<graph::GroupId, int32_t> key_of_set(g.groups().size(),
                                               std::numeric_limits<int32_t>::max());
  for (OpId op : g.op_ids()) {
    const graph::GroupId grp = g.op(op).colocation;
    if (grp == graph::kNoGroup) continue;
    int32_t& k = key_of_set[first.sets.Find(grp)];
    k = std::min(k, first.of[op]);
  }
  sim::PerOp<int32_t> key(g.ops().size());
  for (OpId op : g.op_ids()) {
    const graph::GroupId grp = g.op(op).colocation;
    key[op] = grp == graph::kNoGroup ? first.of[op] : key_of_set[first.sets.Find(grp)];
  }
  Intervals keyed = SplitIntoIntervals(p, options, KeyedTopologicalOrder(g, key));
  return keyed.count < first.count ? std::move(keyed) : std::move(first);
}

}  // namespace

sim::Placement Coarsening::Expand(const sim::Placement& coarse) const {
  sim::Placement out(coarse_of.size());
  for (sim::OpId i : coarse_of.ids()) out[i] = coarse[coarse_of[i]];
  return out;
}

StatusOr<Coarsening> Coarsen(const sim::Problem& p, const CoarsenOptions& options) {
  const graph::Graph& g = p.g();
  Intervals intervals = SplitIntoIntervals(p, options);
  GroupSets& sets = intervals.sets;
  const int count = intervals.count;
  Coarsening out;
  out.coarse_of.resize(g.ops().size());
  for (OpId op : g.op_ids()) out.coarse_of[op] = OpId(intervals.of[op]);

  sim::PerOp<std::vector<OpId>> members(static_cast<size_t>(count));  // by coarse op
  for (OpId op : g.op_ids()) members[out.coarse_of[op]].push_back(op);
  auto outside = [&](graph::TensorId t, OpId c) {
    const auto consumers = g.Consumers(t);
    if (consumers.empty()) return true;  // kept to the end of the step: it stays an output
    return std::any_of(consumers.begin(), consumers.end(),
                       [&](OpId x) { return out.coarse_of[x] != c; });
  };

  graph::GraphBuilder builder(g.name());
  sim::PerTensor<int32_t> output_index(g.tensors().size(), -1);
  for (OpId c : members.ids()) {
    const auto& ops = members[c];
    const graph::Op& first = g.op(ops.front());
    graph::Op coarse;
    coarse.name =
        ops.size() == 1 ? first.name : first.name + " (+" + std::to_string(ops.size() - 1) + ")";
    coarse.type = ops.size() == 1 ? first.type : "Coarse";
    coarse.kind = first.kind;
    coarse.device_kinds = first.device_kinds;
    std::vector<graph::TensorSpec> outputs;
    for (OpId op : ops) {
      const graph::Op& o = g.op(op);
      coarse.flops += o.flops;
      coarse.bytes_accessed += o.bytes_accessed;
      coarse.param_bytes += o.param_bytes;
      double internal = 0;  // outputs only this coarse op reads: held while it runs
      for (graph::TensorId t = g.FirstOutput(op); t < g.FirstOutput(op + 1); ++t) {
        if (outside(t, c)) {
          output_index[t] = static_cast<int32_t>(outputs.size());
          outputs.push_back({.bytes = g.tensor(t).bytes,
                             .transfer_time_s = g.tensor(t).transfer_time_s,
                             .cpu_bytes = g.tensor(t).cpu_bytes});
        } else {
          internal += g.tensor(t).bytes;
        }
      }
      coarse.scratch_bytes = std::max(coarse.scratch_bytes, o.scratch_bytes + internal);
      if (o.colocation != graph::kNoGroup) {
        coarse.colocation = builder.Group(g.groups()[sets.Find(o.colocation)]);
      }
    }
    builder.AddOp(std::move(coarse), std::move(outputs));
  }
  for (OpId c : members.ids()) {
    for (OpId op : members[c]) {
      for (graph::TensorId t = g.FirstOutput(op); t < g.FirstOutput(op + 1); ++t) {
        const int32_t index = output_index[t];
        if (index < 0) continue;
        OpId last{-1};
        for (OpId consumer : g.Consumers(t)) {
          const OpId to = out.coarse_of[consumer];
          if (to == c || to == last) continue;
          builder.AddEdge(c, index, to);
          last = to;
        }
      }
    }
  }
  DPLACE_ASSIGN_OR_RETURN(graph::Graph coarse_graph, builder.Build());
  const sim::MissingDevice missing =
      p.infeasible_reason.empty() ? sim::MissingDevice::kBadInput : sim::MissingDevice::kInfeasible;
  DPLACE_ASSIGN_OR_RETURN(
      sim::Problem coarse_problem,
      sim::MakeProblem(std::make_shared<const graph::Graph>(std::move(coarse_graph)), p.cluster,
                       p.objective, cost::CostTable::Summed(p.costs, out.coarse_of, count),
                       missing));
  if (!(p.step_model == sim::StepModel{})) {  // the same step model, with its lower bound
    DPLACE_ASSIGN_OR_RETURN(coarse_problem,
                            sim::MakeVariant(coarse_problem, {.model = p.step_model}));
  }
  out.problem = std::make_shared<const sim::Problem>(std::move(coarse_problem));
  return out;
}

StatusOr<PlaceResult> PlaceCoarsened(Placer& placer, const sim::Problem& problem,
                                     const PlaceRequest& request, const CoarsenOptions& options) {
  if (problem.num_ops() <= 2 * options.target_ops) return placer.Place(problem, request);
  const Budget budget(request.limits, *request.evaluator);
  DPLACE_ASSIGN_OR_RETURN(Coarsening coarsening, Coarsen(problem, options));
  const std::unique_ptr<sim::Evaluator> evaluator = sim::MakeEvaluator(coarsening.problem);
  sim::Placement coarse_start;  // a given start, as the coarse ops' devices (the last op's wins)
  if (const sim::Placement* start = StartOf(problem, request)) {
    coarse_start.assign(coarsening.problem->g().ops().size(), sim::DeviceId(0));
    for (sim::OpId i : start->ids()) coarse_start[coarsening.coarse_of[i]] = (*start)[i];
  }
  // The coarse search has three quarters of the time when the result is refined after.
  const bool refine = options.refine && request.limits.seconds > 0;
  const PlaceRequest coarse_request{
      .evaluator = evaluator.get(),
      .seed = request.seed,
      .limits = {.evaluations = request.limits.evaluations,
                 .seconds = refine ? budget.Split(0.75).seconds : request.limits.seconds},
      .start = coarse_start.empty() ? nullptr : &coarse_start};
  DPLACE_ASSIGN_OR_RETURN(PlaceResult coarse, placer.Place(*coarsening.problem, coarse_request));
  PlaceResult out{.placement = coarsening.Expand(coarse.placement),
                  .note = "coarsened " + std::to_string(problem.num_ops()) + " -> " +
                          std::to_string(coarsening.problem->num_ops()) + " ops"};
  if (!coarse.note.empty()) out.note += "; " + coarse.note;
  // A bound the coarse placer proved holds for coarse placements only: not passed on.
  if (refine && !budget.Out()) {
    auto refiner = MakeLocalSearchPlacer({.restarts = 1}, nullptr);
    const PlaceRequest fine_request{.evaluator = request.evaluator,
                                    .seed = request.seed,
                                    .limits = {.evaluations = request.limits.evaluations,
                                               .seconds = budget.Remaining().seconds},
                                    .start = &out.placement};
    DPLACE_ASSIGN_OR_RETURN(PlaceResult fine, refiner->Place(problem, fine_request));
    out.placement = std::move(fine.placement);
    out.note += "; refined by local search on every op";
    out.stats.evaluations += fine.stats.evaluations;
  }
  out.stats.evaluations += coarse.stats.evaluations;  // on the coarse problem and the problem
  out.stats.seconds = budget.Elapsed();
  return out;
}

}  // namespace dplace::place
