// The run service: what the CLI, the benches, the Python module and training call to place a
// problem. Run() makes the placer from the table with its options, coarsens a large graph (unless
// the placer is exact), places, and judges the placement with a fresh evaluator of the problem;
// the result carries the problem's lower bound raised by any bound the placer proved. With
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
};

// A judged placement: what every report prints.
struct PlacerResult {
  std::string placer;
  sim::Placement placement;
  sim::Evaluation evaluation;  // lower_bound: the problem's, raised by the placer's proof
  double search_time_s = 0;
  std::string note;                  // what the placer says of its result (e.g. "optimal")
  int64_t evaluations = 0;           // evaluations the placer made
  std::vector<std::string> options;  // the run's placer options, "placer.key=value"
  // The placement on the request's robust variants (none when it asked for none), and whether the
  // placer searched by it.
  std::optional<sim::RobustJudgement> robust;
  bool robust_optimised = false;
};

// InvalidInput for a placer or option the table does not know and for bad robust options
// (sim::CheckRobustOptions); the placer's own errors with its name.
StatusOr<PlacerResult> Run(const std::shared_ptr<const sim::Problem>& problem,
                           const RunRequest& request);

// A bound a placer proved holds for every placement of the problem: gives each result the best.
void ShareBestLowerBound(std::vector<PlacerResult>* results);

}  // namespace dplace::run
