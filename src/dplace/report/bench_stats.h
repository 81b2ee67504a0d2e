// The statistics of a bench suite that compares baselines with dplace: per workload the best
// classic baseline (PlacerTraits::classic) against the best result of all, and over the suite the
// geometric mean of their ratio (docs/bench-models.md states the target on it).
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/run/run.h"

namespace dplace::report {

struct Comparison {
  std::string classic, best;         // placers
  double classic_s = 0, best_s = 0;  // their values
  double best_gap = 0;               // of the best, to the lower bound
  bool single_within_5pct = false;   // one device already within 5% of the lower bound
  double ratio() const { return best_s / classic_s; }
};

// The comparison of one workload's results; none when no classic baseline placed it feasibly.
// `lower_bound`: the run's (run::LowerBound); `is_classic` says which placers are classic
// baselines.
std::optional<Comparison> Compare(const std::vector<run::PlacerResult>& results, double lower_bound,
                                  bool (*is_classic)(const std::string& placer));

// Geometric means of best / best classic: over all workloads, and over those where one device is
// not already within 5% of the lower bound. JSON: {"workloads", "geomean_ratio",
// "workloads_single_not_within_5pct", "geomean_ratio_single_not_within_5pct",
// "worse_than_best_classic"}.
Json Summarise(const std::vector<std::pair<std::string, Comparison>>& comparisons);

// The comparison as a text table with the summary line under it.
std::string ComparisonSummary(const std::vector<std::pair<std::string, Comparison>>& comparisons,
                              const Json& summary);

}  // namespace dplace::report
