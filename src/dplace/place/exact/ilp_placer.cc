// `ilp` and `ilp_contiguous`: the integer programs of Tarnawski et al., NeurIPS 2020
// (ilp_programs.h) solved with CBC instead of a commercial solver.
//   ilp             throughput: the non-contiguous max-load program, started from the linear-order
//                   optimum (`pipedream`); latency: the single-sample latency program, started
//                   from the best of the linear latency split (SolveLinearLatency), that
//                   max-load split, everything on the CPU pool and everything on one accelerator.
//   ilp_contiguous  the contiguous max-load program, started from `dp`'s split: it proves (or
//                   bounds) the same optimum by a different method.
// Each stops at --time-limit (default 60 s) or after a number of branch-and-bound nodes (the
// evaluation budget, default 100,000; a node limit is reproducible, a time limit is not), reports
// its proven bound, and never returns worse than its start.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <limits>

#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/exact/ilp_programs.h"

namespace dplace::place {
namespace {

constexpr double kDefaultTimeLimitS = 60;
constexpr int64_t kDefaultMaxNodes = 100000;  // the evaluation budget overrides it

using Clock = std::chrono::steady_clock;

// The placer's time limit (--time-limit, else the default), and what is left of it since `began`.
double LimitSeconds(const PlaceContext& ctx) {
  return ctx.budget.time_limit_s > 0 ? ctx.budget.time_limit_s : kDefaultTimeLimitS;
}
double SecondsLeft(const PlaceContext& ctx, Clock::time_point began) {
  return LimitSeconds(ctx) - std::chrono::duration<double>(Clock::now() - began).count();
}

// Solves `program` from `start` (may be empty) and returns the better of CBC's answer and the
// start; `fallback` when neither exists. `what` names the program in the note. The program's
// proven bound is a lower bound of the problem (ctx.lower_bound) only when `bounds_problem`: the
// program optimises the problem's objective over every feasible placement. The time limit counts
// from `began`, when the placer started.
StatusOr<sim::Placement> Solve(const sim::Problem& p, PlaceContext& ctx,
                               const PlacementProgram& program, sim::Objective optimises,
                               bool bounds_problem, const sim::Placement& start,
                               const sim::Placement& fallback, const std::string& what,
                               Clock::time_point began) {
  MilpOptions options;
  options.time_limit_s = std::max(0.1, SecondsLeft(ctx, began));
  options.max_nodes =
      ctx.budget.max_evaluations > 0 ? ctx.budget.max_evaluations : kDefaultMaxNodes;
  if (!start.empty()) options.start = program.StartValues(start);
  const StatusOr<MilpResult> solved = SolveWithCbc(program.milp(), options);
  if (!solved.ok()) {  // stopped at the time limit, or out of memory: the start stands
    if (solved.status().code() != StatusCode::kInvalidInput) return solved.status();
    ctx.note =
        solved.status().message() + "; " + (start.empty() ? "nothing" : "its start") + " returned";
    return start.empty() ? fallback : start;
  }
  const MilpResult& r = *solved;
  if (r.status == MilpStatus::kInfeasible) {
    ctx.note = "infeasible: no " + what + " fits the devices (proven by CBC)";
    return start.empty() ? fallback : start;
  }
  if (bounds_problem) ctx.lower_bound = std::max(ctx.lower_bound, r.best_bound);
  if (r.status == MilpStatus::kNoSolution) {
    ctx.note = "no solution within the limits; bound " + std::to_string(r.best_bound);
    return start.empty() ? fallback : start;
  }
  sim::Placement placement = program.Decode(r.values, p.num_ops());
  const sim::Evaluation e = ctx.evaluator->Evaluate(placement);
  bool kept_start = false;
  if (!start.empty()) {  // CBC may drop the start; never return worse by the problem's objective
    const sim::Evaluation from_start = ctx.evaluator->Evaluate(start);
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
  ctx.note = note;
  if (kept_start) ctx.note += "; its start is better and is returned";
  return placement;
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
sim::Placement BestFeasible(const std::vector<sim::Placement>& candidates, PlaceContext& ctx) {
  sim::Placement best;
  double best_value = std::numeric_limits<double>::infinity();
  for (const sim::Placement& c : candidates) {
    if (c.empty()) continue;
    const sim::Evaluation e = ctx.evaluator->Evaluate(c);
    if (e.feasible && e.value < best_value) {
      best = c;
      best_value = e.value;
    }
  }
  return best;
}

class IlpPlacer : public Placer {
 public:
  std::string_view name() const override { return "ilp"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const Clock::time_point began = Clock::now();
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel m, BuildContiguousModel(p, /*for_contiguity=*/false));
    // The starts may take a third of the time; CBC has the rest.
    DPLACE_ASSIGN_OR_RETURN(const LinearSplits linear,
                            SplitLinearOrder(p, DeadlineAfter(LimitSeconds(ctx) / 3)));
    const double left = SecondsLeft(ctx, began);
    if (p.objective != sim::Objective::kLatency) {
      const sim::Placement start = BestFeasible({linear.max_load}, ctx);
      if (TooLargeToBuild(m, left, &ctx.note)) {
        ctx.note += start.empty() ? "" : "; the best split of one topological order returned";
        return start.empty() ? NoSplitFits(m, p.num_ops()) : start;
      }
      return Solve(p, ctx, *NonContiguousMaxLoad(m), sim::Objective::kThroughput, true,
                   start.empty() ? linear.max_load : start, NoSplitFits(m, p.num_ops()),
                   "non-contiguous split", began);
    }
    std::vector<sim::Placement> candidates = {linear.latency, linear.max_load};
    for (const auto* devices : {&m.cpus, &m.accelerators}) {
      if (!devices->empty()) candidates.emplace_back(p.num_ops(), devices->front());
    }
    const sim::Placement start = BestFeasible(candidates, ctx);
    if (TooLargeToBuild(m, left, &ctx.note)) {
      ctx.note += start.empty() ? "" : "; the best of its starts returned";
      return start.empty() ? NoSplitFits(m, p.num_ops()) : start;
    }
    // The start's latency bounds the optimum (with room for the solver's rounding).
    const double upper_bound = start.empty()
                                   ? std::numeric_limits<double>::infinity()
                                   : ctx.evaluator->Evaluate(start).value * (1 + 1e-6) + 1e-9;
    return Solve(p, ctx, *Latency(p, m, upper_bound), sim::Objective::kLatency, true, start,
                 NoSplitFits(m, p.num_ops()), "single-sample latency split", began);
  }
};

class IlpContiguousPlacer : public Placer {
 public:
  std::string_view name() const override { return "ilp_contiguous"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const Clock::time_point began = Clock::now();
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel m, BuildContiguousModel(p));
    // `dp` may take half the time; CBC has the rest.
    PlaceContext dp_ctx{.evaluator = ctx.evaluator, .seed = ctx.seed, .budget = ctx.budget};
    dp_ctx.budget.time_limit_s = LimitSeconds(ctx) / 2;
    DPLACE_ASSIGN_OR_RETURN(sim::Placement dp, MakeDpPlacer()->Place(p, dp_ctx));
    const sim::Placement start = BestFeasible({dp}, ctx);
    const double left = SecondsLeft(ctx, began);
    if (TooLargeToBuild(m, left, &ctx.note)) {
      ctx.note += start.empty() ? "" : "; dp's split returned";
      return start.empty() ? NoSplitFits(m, p.num_ops()) : start;
    }
    // Its bound holds for contiguous splits only: it is not a bound of the problem.
    return Solve(p, ctx, *ContiguousMaxLoad(m), sim::Objective::kThroughput, false, start,
                 NoSplitFits(m, p.num_ops()), "contiguous split", began);
  }
};

}  // namespace

std::unique_ptr<Placer> MakeIlpPlacer() { return std::make_unique<IlpPlacer>(); }
std::unique_ptr<Placer> MakeIlpContiguousPlacer() {
  return std::make_unique<IlpContiguousPlacer>();
}

}  // namespace dplace::place
