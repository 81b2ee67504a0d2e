// `ilp` and `ilp_contiguous`: the integer programs of Tarnawski et al., NeurIPS 2020
// (ilp_programs.h) solved with CBC instead of a commercial solver.
//   ilp             throughput: the non-contiguous max-load program, started from the linear-order
//                   optimum (`pipedream`); latency: the single-sample latency program, started
//                   from the best of the linear latency split (SolveLinearLatency), that
//                   max-load split, everything on the CPU pool and everything on one accelerator.
//   ilp_contiguous  the contiguous max-load program, started from `dp`'s split: it proves (or
//                   bounds) the same optimum by a different method.
// Each stops at --time-limit (default: the option time_limit_s) or after `max_nodes`
// branch-and-bound nodes (a node limit is reproducible, a time limit is not), reports its proven
// bound, and never returns worse than its start.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "dplace/place/budget.h"
#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/exact/ilp_programs.h"

namespace dplace::place {
namespace {

// The placer's budget: the request's time limit, else the option's.
Budget IlpBudget(const PlaceRequest& req, const IlpOptions& o) {
  return Budget({.seconds = req.limits.seconds > 0 ? req.limits.seconds : o.time_limit_s},
                *req.evaluator);
}

// Solves `program` from `start` (may be empty) and returns the better of CBC's answer and the
// start; `fallback` when neither exists. `what` names the program in the note. The program's
// proven bound is a lower bound of the problem (PlaceResult::proven_bound) only when
// `bounds_problem`: the program optimises the problem's objective over every feasible placement.
// CBC has what is left of `budget`.
StatusOr<PlaceResult> Solve(const sim::Problem& p, const PlaceRequest& req, const IlpOptions& o,
                            const Budget& budget, const PlacementProgram& program,
                            sim::Objective optimises, bool bounds_problem,
                            const sim::Placement& start, const sim::Placement& fallback,
                            const std::string& what) {
  MilpOptions options;
  options.time_limit_s = std::max(0.1, budget.Remaining().seconds);
  options.max_nodes = o.max_nodes;
  options.memory_bytes = o.memory_gib * (1ull << 30);
  PlaceResult out;
  if (!start.empty()) options.start = program.StartValues(start);
  const StatusOr<MilpResult> solved = SolveWithCbc(program.milp(), options);
  if (!solved.ok()) {  // stopped at the time limit, or out of memory: the start stands
    if (solved.status().code() != StatusCode::kInvalidInput) return solved.status();
    out.note =
        solved.status().message() + "; " + (start.empty() ? "nothing" : "its start") + " returned";
    out.placement = start.empty() ? fallback : start;
    return out;
  }
  const MilpResult& r = *solved;
  if (r.status == MilpStatus::kInfeasible) {
    out.note = "infeasible: no " + what + " fits the devices (proven by CBC)";
    out.placement = start.empty() ? fallback : start;
    return out;
  }
  if (bounds_problem) out.proven_bound = r.best_bound;
  if (r.status == MilpStatus::kNoSolution) {
    out.note = "no solution within the limits; bound " + std::to_string(r.best_bound);
    out.placement = start.empty() ? fallback : start;
    return out;
  }
  sim::Placement placement = program.Decode(r.values, p.num_ops());
  const sim::Evaluation e = req.evaluator->Evaluate(placement);
  bool kept_start = false;
  if (!start.empty()) {  // CBC may drop the start; never return worse by the problem's objective
    const sim::Evaluation from_start = req.evaluator->Evaluate(start);
    if ((from_start.feasible && !e.feasible) ||
        (from_start.feasible == e.feasible && from_start.value < e.value)) {
      placement = start;
      kept_start = true;
    }
  }
  const bool proven = r.status == MilpStatus::kOptimal;
  char note[200];
  const double gap =
      r.objective > 0 ? std::max(0.0, (r.objective - r.best_bound) / r.objective) : 0;
  std::snprintf(note, sizeof(note), "%s %s: %s %.10g, bound %.10g (gap %.2f%%)",
                proven ? "optimal" : "time or node limit,", what.c_str(),
                std::string(sim::ValueName(optimises)).c_str(), r.objective, r.best_bound,
                100 * gap);
  out.note = note;
  if (kept_start) out.note += "; its start is better and is returned";
  out.placement = std::move(placement);
  return out;
}

// Splits of one topological order of the DP's units: the max-load optimum (PipeDream's DP) and,
// for latency, the linear latency heuristic; empty where no split of that order fits.
struct LinearSplits {
  sim::Placement max_load, latency;
};
StatusOr<LinearSplits> SplitLinearOrder(const sim::Problem& p, Deadline deadline) {
  DPLACE_ASSIGN_OR_RETURN(ContiguousModel contiguous, BuildContiguousModel(p));
  LinearSplits out;
  const ContiguousSolution linear = SolveLinear(contiguous, deadline);
  if (linear.found) out.max_load = ToPlacement(contiguous, linear, p.num_ops());
  if (p.objective == sim::Objective::kLatency) {
    const ContiguousSolution latency = SolveLinearLatency(contiguous, deadline);
    if (latency.found) out.latency = ToPlacement(contiguous, latency, p.num_ops());
  }
  return out;
}

// Whether the program over `m` is too large to build and hand to CBC in the `seconds_left`: about
// 5 nonzeros per (unit or tensor consumer) and device (measured on chains: 450k for 5,000 units on
// 9 devices); building runs at about 1.6M nonzeros a second, and may take a quarter of the time.
// A program that passes can still not finish: CBC is then stopped at the limit (SolveWithCbc).
bool TooLargeToBuild(const ContiguousModel& m, double seconds_left, std::string* note) {
  double entries = m.num_units;
  for (const auto& t : m.tensors) entries += static_cast<double>(t.consumers.size());
  const double devices = static_cast<double>(m.accelerators.size() + m.cpus.size());
  const double nonzeros = 5 * entries * devices;
  if (nonzeros <= 400'000 * std::max(0.0, seconds_left)) return false;
  char text[200];
  std::snprintf(text, sizeof(text),
                "the integer program (about %.3g nonzeros) is too large for CBC in %.3g s",
                nonzeros, seconds_left);
  *note = text;
  return true;
}

// The best feasible placement among `candidates` by the evaluator; empty when none is feasible.
sim::Placement BestFeasible(const std::vector<sim::Placement>& candidates,
                            sim::Evaluator* evaluator) {
  sim::Placement best;
  double best_value = std::numeric_limits<double>::infinity();
  for (const sim::Placement& c : candidates) {
    if (c.empty()) continue;
    const sim::Evaluation e = evaluator->Evaluate(c);
    if (e.feasible && e.value < best_value) {
      best = c;
      best_value = e.value;
    }
  }
  return best;
}

// What a placer returns when it does not run CBC: the best start, else `fallback`, with `note`.
PlaceResult Unsolved(const sim::Placement& start, sim::Placement fallback, std::string note,
                     const char* returned) {
  if (!start.empty()) note += returned;
  return PlaceResult{start.empty() ? std::move(fallback) : sim::Placement(start), std::move(note)};
}

class IlpPlacer : public Placer {
 public:
  explicit IlpPlacer(IlpOptions options) : options_(options) {}
  std::string_view name() const override { return "ilp"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const Budget budget = IlpBudget(req, options_);
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel m, BuildContiguousModel(p, /*for_contiguity=*/false));
    DPLACE_ASSIGN_OR_RETURN(
        const LinearSplits linear,
        SplitLinearOrder(p, DeadlineAfter(budget.Split(options_.start_share).seconds)));
    const double left = budget.Remaining().seconds;
    std::string note;
    // The programs count the first accelerator's times and memory for every accelerator.
    const std::string unlike =
        "the integer programs take accelerators of one kind, speed and memory";
    if (p.objective != sim::Objective::kLatency) {
      const sim::Placement start = BestFeasible({linear.max_load}, req.evaluator);
      if (m.Heterogeneous()) {
        return Unsolved(start, NoSplitFits(m, p.num_ops()), unlike,
                        "; the best split of one topological order returned");
      }
      if (TooLargeToBuild(m, left, &note)) {
        return Unsolved(start, NoSplitFits(m, p.num_ops()), note,
                        "; the best split of one topological order returned");
      }
      // The max-load program's bound is the problem's only under the max-load objective: the
      // step and pipeline objectives charge transfers and schedules otherwise.
      return Solve(p, req, options_, budget, *NonContiguousMaxLoad(m), sim::Objective::kThroughput,
                   p.objective == sim::Objective::kThroughput,
                   start.empty() ? linear.max_load : start, NoSplitFits(m, p.num_ops()),
                   "non-contiguous split");
    }
    std::vector<sim::Placement> candidates = {linear.latency, linear.max_load};
    for (const auto* devices : {&m.cpus, &m.accelerators}) {
      if (!devices->empty()) candidates.emplace_back(p.num_ops(), devices->front());
    }
    const sim::Placement start = BestFeasible(candidates, req.evaluator);
    if (m.Heterogeneous()) {
      return Unsolved(start, NoSplitFits(m, p.num_ops()), unlike,
                      "; the best of its starts returned");
    }
    if (TooLargeToBuild(m, left, &note)) {
      return Unsolved(start, NoSplitFits(m, p.num_ops()), note,
                      "; the best of its starts returned");
    }
    // The start's latency bounds the optimum (with room for the solver's rounding).
    const double upper_bound = start.empty()
                                   ? std::numeric_limits<double>::infinity()
                                   : req.evaluator->Evaluate(start).value * (1 + 1e-6) + 1e-9;
    return Solve(p, req, options_, budget, *Latency(p, m, upper_bound), sim::Objective::kLatency,
                 true, start, NoSplitFits(m, p.num_ops()), "single-sample latency split");
  }

  IlpOptions options_;
};

class IlpContiguousPlacer : public Placer {
 public:
  explicit IlpContiguousPlacer(IlpOptions options) : options_(options) {}
  std::string_view name() const override { return "ilp_contiguous"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const Budget budget = IlpBudget(req, options_);
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel m, BuildContiguousModel(p));
    // `dp` may take its share of the time; CBC has the rest.
    const PlaceRequest dp_req{
        .evaluator = req.evaluator, .seed = req.seed, .limits = budget.Split(options_.start_share)};
    DPLACE_ASSIGN_OR_RETURN(PlaceResult dp, MakeDpPlacer()->Place(p, dp_req));
    const sim::Placement start = BestFeasible({dp.placement}, req.evaluator);
    std::string note;
    if (!m.UniformReplicas() || m.Heterogeneous()) {
      return Unsolved(start, NoSplitFits(m, p.num_ops()),
                      "the program takes accelerators of one kind, speed, memory and replica "
                      "count",
                      "; dp's split returned");
    }
    if (TooLargeToBuild(m, budget.Remaining().seconds, &note)) {
      return Unsolved(start, NoSplitFits(m, p.num_ops()), note, "; dp's split returned");
    }
    // Its bound holds for contiguous splits only: it is not a bound of the problem.
    return Solve(p, req, options_, budget, *ContiguousMaxLoad(m), sim::Objective::kThroughput,
                 false, start, NoSplitFits(m, p.num_ops()), "contiguous split");
  }

  IlpOptions options_;
};

}  // namespace

void ReadOptions(OptionReader& r, IlpOptions* o) {
  r.Read("time_limit_s", &o->time_limit_s, 0.01, 1e6, "seconds when --time-limit is not given");
  r.Read("max_nodes", &o->max_nodes, 1, int64_t{1} << 40,
         "branch-and-bound nodes CBC may explore (reproducible, unlike a time limit)");
  r.Read("memory_gib", &o->memory_gib, 0.1, 1024, "address space of the CBC process, GiB");
  r.Read("start_share", &o->start_share, 0.01, 0.9,
         "share of the time for the start (linear-order splits; dp for ilp_contiguous)");
}

std::unique_ptr<Placer> MakeIlpPlacer(IlpOptions options) {
  return std::make_unique<IlpPlacer>(options);
}
std::unique_ptr<Placer> MakeIlpContiguousPlacer(IlpOptions options) {
  return std::make_unique<IlpContiguousPlacer>(options);
}

}  // namespace dplace::place
