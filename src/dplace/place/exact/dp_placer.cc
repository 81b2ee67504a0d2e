// `dp`: optimal contiguous max-load (Tarnawski et al., NeurIPS 2020), see contiguous_dp.h. A first
// pass over the prefixes of one topological order (PipeDream's linear DP, milliseconds) gives an
// upper bound; the exact pass over all ideals then only looks at sets that could beat it.
#include <algorithm>
#include <limits>
#include <string>

#include "dplace/place/baseline/baseline.h"
#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/contiguous_model.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/exact/ideal_lattice.h"
#include "dplace/place/search/score.h"
#include "dplace/sim/evaluator.h"

namespace dplace::place {
namespace {

constexpr int64_t kMaxIdeals = 2'000'000;  // for time; MaxIdealsInMemory bounds memory

// The groups of replicas a solution chose (PlaceResult::groups): each accelerator that leads a
// stage with its followers, every other device alone. Empty when every stage has one replica.
std::vector<std::vector<sim::DeviceId>> GroupsOf(const sim::Problem& p, const ContiguousModel& m,
                                                 const ContiguousSolution& s) {
  bool any = false;
  for (int span : s.accel_span) any = any || span > 1;
  if (!any) return {};
  std::vector<int> span_of(static_cast<size_t>(p.num_devices()), 1);
  for (size_t i = 0; i < s.accel_span.size(); ++i) {
    span_of[m.accelerators[i].index()] = s.accel_span[i];
  }
  std::vector<std::vector<sim::DeviceId>> groups;
  for (sim::DeviceId d : p.c().device_ids()) {
    if (span_of[d.index()] == 0) continue;  // a follower: in its leader's group
    groups.push_back({d});
    const auto at = std::find(m.accelerators.begin(), m.accelerators.end(), d);
    for (int x = 1; x < span_of[d.index()]; ++x) groups.back().push_back(*(at + x));
  }
  return groups;
}

// A split as a result: its placement and, choosing replicas, its groups.
PlaceResult ResultOf(const sim::Problem& p, const ContiguousModel& m, const ContiguousSolution& s,
                     std::string note) {
  PlaceResult r{ToPlacement(m, s, p.num_ops()), std::move(note)};
  r.groups = GroupsOf(p, m, s);
  return r;
}

// A result judged: by the request's evaluator, or, with groups, by the simulation of the grouped
// problem (the request's evaluator judges one replica a stage).
sim::Evaluation Judge(const sim::Problem& p, const PlaceRequest& req, const PlaceResult& r) {
  if (r.groups.empty()) return req.evaluator->Evaluate(r.placement);
  auto grouped = sim::GroupedProblem(p, r.groups);
  if (!grouped.ok()) {
    sim::Evaluation e = req.evaluator->Evaluate(r.placement);
    e.feasible = false;
    e.reason = grouped.status().message();
    return e;
  }
  return sim::MakeEvaluator(*grouped)->Evaluate(sim::GroupedPlacement(r.placement, r.groups));
}

// The DP's best split of `model` by its max-load: the linear pass, then the exact pass bounded by
// it. `note` says what was proven.
ContiguousSolution BestSplit(const ContiguousModel& model, Deadline deadline, std::string* note) {
  ContiguousSolution linear = SolveLinear(model, deadline);
  if (!linear.complete && !linear.found) {
    *note =
        "time limit reached before any split over one topological order was found: "
        "everything on one device";
    return linear;
  }
  ContiguousSolution best = linear;
  auto lattice =
      IdealLattice::All(model.preds, std::min(kMaxIdeals, MaxIdealsInMemory(model)), deadline);
  if (!lattice.ok()) {
    *note = "not proven optimal: " + lattice.status().message() +
            "; best split over one topological order";
    return best;
  }
  const double bound = linear.found ? linear.max_load : std::numeric_limits<double>::infinity();
  const ContiguousSolution exact = SolveContiguous(model, *lattice, bound, deadline);
  if (exact.found) best = exact;
  *note = exact.complete
              ? "optimal contiguous split (" + std::to_string(lattice->size()) + " ideals)"
              : "not proven optimal: time limit reached";
  return best;
}

// Under the pipeline objective a transfer delays the stage that waits for it but occupies
// neither stage (the schedule overlaps it with other micro-batches' work), where the paper's
// max-load charges it to both; and 1F1B lets a stage hold as many micro-batches as stages follow
// it, so stages on parallel branches (two towers) hide each other's round trips, which no load
// model sees. The split that is optimal for one charge can then lose to the frameworks'
// count-based splits in the schedule. So dp solves the DP under several charges of communication
// (the paper's, half, none: stage work only), and returns, of these optima and the frameworks'
// splits of the same units (uniform, parameters, blocks), the split the request's evaluator (the
// schedule's simulation) judges best, saying which in its note: never worse than a framework's
// default in the schedule.
constexpr double kPipelineCommCharges[] = {1.0, 0.5, 0.0};

std::string ChargeName(double charge) {
  if (charge == 1.0) return "the paper's charge for transfers";
  if (charge == 0.0) return "no charge for transfers";
  return "half the charge for transfers";
}

class DpPlacer : public Placer {
 public:
  std::string_view name() const override { return "dp"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const Deadline deadline = DeadlineAfter(req.limits.seconds);
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel model, BuildContiguousModel(p));
    std::string note;
    ContiguousSolution best = BestSplit(model, deadline, &note);
    if (p.objective == sim::Objective::kPipeline && best.found && req.evaluator != nullptr) {
      return BestForSchedule(p, req, model, best, note, deadline);
    }
    if (best.found) return ResultOf(p, model, best, note);
    // Nothing found: the time ran out first (the note says so), or no split fits.
    if (best.complete) note = "no contiguous split fits the devices";
    return PlaceResult{NoSplitFits(model, p.num_ops()), note};
  }

  // `paper` is the optimum under the paper's charge; the others are solved from copies of `model`
  // with their charge, while the deadline lets them.
  static StatusOr<PlaceResult> BestForSchedule(const sim::Problem& p, const PlaceRequest& req,
                                               const ContiguousModel& model,
                                               const ContiguousSolution& paper,
                                               const std::string& paper_note, Deadline deadline) {
    PlaceResult best = ResultOf(p, model, paper, paper_note);
    sim::Evaluation judged = Judge(p, req, best);
    std::string chosen = ChargeName(1.0);
    auto consider = [&](PlaceResult candidate, std::string what) {
      sim::Evaluation e = Judge(p, req, candidate);
      if (!(ScoreOf(e) < ScoreOf(judged))) return;
      judged = std::move(e);
      best = std::move(candidate);
      chosen = std::move(what);
    };
    for (const double charge : kPipelineCommCharges) {
      if (charge == 1.0) continue;
      if (std::chrono::steady_clock::now() >= deadline) break;
      ContiguousModel charged = model;
      for (ContiguousModel::Tensor& t : charged.tensors) t.cost *= charge;
      std::string note;
      const ContiguousSolution split = BestSplit(charged, deadline, &note);
      if (split.found) consider(ResultOf(p, charged, split, note), ChargeName(charge));
    }
    for (auto make : {MakeUniformSplitPlacer, MakeParametersSplitPlacer, MakeBlocksSplitPlacer}) {
      std::unique_ptr<Placer> rule = make();
      DPLACE_ASSIGN_OR_RETURN(PlaceResult split, rule->Place(p, req));
      const std::string name(rule->name());
      consider(PlaceResult{std::move(split.placement), "the frameworks' '" + name + "' split"},
               "the '" + name + "' rule");
    }
    best.note += " (" + chosen + "; the best in the schedule of the optima under " +
                 std::to_string(std::size(kPipelineCommCharges)) +
                 " charges for transfers and the frameworks' splits)";
    return best;
  }
};

}  // namespace

std::unique_ptr<Placer> MakeDpPlacer() { return std::make_unique<DpPlacer>(); }

}  // namespace dplace::place
