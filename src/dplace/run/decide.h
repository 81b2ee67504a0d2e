// The run decisions the CLI and Python share: what `all` means, running several placers in one
// total time, how results rank (the robust value where the searches minimised it), and which plan
// to deploy (the tolerance rule). The commands word their errors with their own flag names.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/place/search/score.h"
#include "dplace/run/run.h"
#include "dplace/sim/robust_evaluator.h"

namespace dplace::run {

// The placers a spec names: "all" is every placer that supports the objective but the meta ones
// (`portfolio` would run them all again); else a comma-separated list of placer names and family
// names (one-shot, search, exact, learned, meta: the family's placers that support the
// objective). InvalidInput, prefixed with `flag`, for an unknown name or an empty list.
StatusOr<std::vector<std::string>> PlacerNames(const std::string& spec, sim::Objective objective,
                                               const std::string& flag = "placer");

// Runs each placer of the valid request in turn, each with the placer Validate made. A total
// time limit: each placer gets the time left divided by the placers left (at least 0.05 s),
// capped by the request's own time limit. `prepared_s`, the seconds the caller spent loading and
// preparing the problem, counts against the time limits: against the total, and in equal parts
// against each placer's own limit (each gets at least 0.05 s). The first placer's error.
StatusOr<std::vector<PlacerResult>> RunAll(const std::shared_ptr<const sim::Problem>& problem,
                                           ValidRequest valid, double prepared_s = 0);
// The least time a placer is given when what is left of a time limit is less.
inline constexpr double kLeastPlacerSeconds = 0.05;

// How results rank: by the robust value where the searches minimised it (feasible on the problem
// and on every variant first), else by the problem's own value.
place::Score RankScore(const PlacerResult& r);

// Best result: feasible first, then the smaller value by RankScore; ties keep the earlier placer.
int BestIndex(const std::vector<PlacerResult>& results);

// The plan to deploy (place/deploy.h): among the feasible results within `tolerance` of the best,
// the one on the fewest devices, then with the fewest bytes crossing, then the smallest value.
// Each candidate is first tidied (ops without work follow their neighbours) where the tidied plan
// is still within the tolerance. Where one device of some kind is within it, `lines` says so (the
// `single` placer, when it ran, is then a candidate on one device).
// `lines` gets what the user should read about the choice. Where the searches minimised the robust
// value, the best by it is the plan (the tolerance weighs the problem's own value only).
int DeployIndex(const std::shared_ptr<const sim::Problem>& shared, double tolerance,
                std::vector<PlacerResult>* results, std::vector<std::string>* lines);

// Judging plans on variants of the model (sim/variants.h): K variants, their seed and spread, and
// the robust objective the searches minimise (worst, median or qQ; empty: the problem's own).
struct RobustSpec {
  int variants = 0;
  std::string objective;
  uint64_t seed = 1;
  double spread = 0.1;
};
// The robust options and whether searches minimise the robust value. InvalidInput naming the
// field (robust, robust_spread, robust_objective): K outside 0..64, a spread outside [0, 2], an
// objective that is not worst, median or qQ (0 < Q <= 1), an objective without K.
StatusOr<std::pair<sim::RobustOptions, bool>> RobustFromSpec(const RobustSpec& spec);

}  // namespace dplace::run
