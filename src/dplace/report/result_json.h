// Machine-readable results (`--json`): one object per evaluated placement, in the schema the
// command line documents: {"objective", "value", "feasible", "lower_bound", "gap", "placer",
// "search_time_s", "devices": [...], "reason" (when infeasible), "robust" (when judged on
// variants)}.
#pragma once

#include <string>

#include "dplace/base/json_node.h"
#include "dplace/run/run.h"
#include "dplace/sim/evaluation.h"

namespace dplace::report {

using run::PlacerResult;

// `lower_bound`: the run's (run::LowerBound), what "gap" is measured to.
Json ResultJson(const sim::Problem& problem, const PlacerResult& result, double lower_bound);

// A result's "robust" object (docs/formats.md): {"variants", "quantile", "value", "median",
// "worst", "feasible", "optimised", "values": [one per variant], "reason" (when infeasible)}.
Json RobustJson(const sim::RobustJudgement& robust, bool optimised);

// What `place --json` and `simulate --json` print (docs/formats.md, "dplace-result/1"): the same
// shape for one result or many: {"format", "graph", "cluster", "objective", "results": [ResultJson
// ...], "best": ResultJson of results[best] plus its "placement" {op name: device name}}, each
// with the run's lower bound.
Json ResultsJson(const sim::Problem& problem, const std::vector<PlacerResult>& results, int best);

// Relative gap to the lower bound: (value - bound) / value; 0 when value is 0.
double Gap(double value, double lower_bound);

// The largest peak memory of any device.
double PeakMemory(const sim::Evaluation& evaluation);

}  // namespace dplace::report
