// The run service: what the CLI, the benches, the Python module and training call to place a
// problem. Validate() checks a request before anything runs and makes its placers; Run() places
// with one of them, coarsening a large graph (unless the placer is exact), and judges the
// placement with a fresh evaluator of the problem; the result carries any bound the placer proved
// (LowerBound() gives the run's: the problem's, raised by every proof). With
// `robust`, the placement is also judged on K variants of the problem (sim/variants.h), and the
// placer may search by that judgement instead (sim/robust_evaluator.h).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/registry/registry.h"
#include "dplace/sim/evaluation.h"
#include "dplace/sim/measured_evaluator.h"
#include "dplace/sim/problem.h"
#include "dplace/sim/robust_evaluator.h"

namespace dplace::run {

struct RunRequest {
  std::string placer;
  place::PlacerOptions options;  // per placer name: its own and its members' (--opt)
  uint64_t seed = 1;
  place::Limits limits;
  const sim::Placement* start = nullptr;  // e.g. --plan: where searches start, what expert returns
  int coarsen_ops = 2000;  // graphs of more than twice this many ops are coarsened (0: never)
  bool refine = true;      // ... and refined on every op after (place/coarsen.h)
  // Judge the placement also on robust.count variants (0: not). With optimise_robust the placer's
  // evaluator is the robust evaluator: searches minimise the robust value (robust.quantile of the
  // variants' values), each judgement costing K evaluations of the budget. Graphs that are
  // coarsened are searched coarse on the problem itself and refined on the robust value.
  sim::RobustOptions robust;
  bool optimise_robust = false;
  // Search by measured steps (sim/measured_evaluator.h): the placer's evaluator measures each
  // placement, and the result's placement is measured once more (PlacerResult::measured_s). Not
  // with optimise_robust. Null: by the simulation.
  std::shared_ptr<const sim::Measurer> measure;
};

// A judged placement: what every report prints.
struct PlacerResult {
  std::string placer;
  sim::Placement placement;
  sim::Evaluation evaluation;
  // A bound the placer proved for every feasible placement of the problem, by its objective
  // (0: none); a placer claims one only where its proof is of that objective.
  double proven_bound = 0;
  double search_time_s = 0;
  std::string note;                  // what the placer says of its result (e.g. "optimal")
  int64_t evaluations = 0;           // evaluations the placer made
  std::vector<std::string> options;  // the run's placer options, "placer.key=value"
  // The placement on the request's robust variants (none when it asked for none), and whether the
  // placer searched by it.
  std::optional<sim::RobustJudgement> robust;
  bool robust_optimised = false;
  // With RunRequest::measure: the measured seconds of a step of the placement (none where it
  // does not fit, so was not run).
  std::optional<double> measured_s;
};

// A request checked before anything runs, with its placers made: each placement uses the placer
// made for it (Take), so no placer is made twice to be checked.
class ValidRequest {
 public:
  const RunRequest& request() const { return request_; }
  const std::vector<std::string>& placers() const { return names_; }
  double total_time_limit_s() const { return total_time_limit_s_; }
  // The i-th placer, made with the request's options: the one Validate made, the first time; a
  // new one after (a placer places once: a learned one may tune itself as it places).
  place::Member Take(size_t i);

 private:
  friend StatusOr<ValidRequest> Validate(RunRequest request, std::vector<std::string> placers,
                                         double total_time_limit_s);
  RunRequest request_;
  double total_time_limit_s_ = 0;
  std::vector<std::string> names_;
  std::vector<place::Member> made_;
};

// The request's numbers and robust options, the part of Validate that needs neither the problem
// nor the placers: a front end may call it before loading a large graph (Validate calls it too).
Status CheckLimits(const RunRequest& request, double total_time_limit_s = 0);

// Every check a front end needs before it runs `placers` with `request` (the request's placer
// field is ignored) in `total_time_limit_s` (0: none; RunAll): the limits (times in [0, 1e6] s,
// evaluations and coarsening not negative), the robust options (sim::CheckRobustOptions) and each
// placer made with the options (unknown placers, unknown keys and bad values). InvalidInput naming
// the field: time_limit, total_time_limit, evaluations, coarsen, robust..., placer or options.
StatusOr<ValidRequest> Validate(RunRequest request, std::vector<std::string> placers,
                                double total_time_limit_s = 0);

// Places with `member` (made with request.options) and judges the result. The placer's own
// errors with its name. Under an interleaved schedule the placer plans chunks (chunks.h); under
// `auto` with the pipeline objective it plans a split and chunks, each in half the limits, and
// the faster is kept.
StatusOr<PlacerResult> Run(const std::shared_ptr<const sim::Problem>& problem,
                           const RunRequest& request, place::Member member);
// Validate for request.placer, then Run with it.
StatusOr<PlacerResult> Run(const std::shared_ptr<const sim::Problem>& problem,
                           const RunRequest& request);

// The bound every result of one run is judged against: the problem's (the objective table's
// bound), raised by the best bound any of the placers proved.
double LowerBound(const sim::Problem& problem, const std::vector<PlacerResult>& results);

}  // namespace dplace::run
