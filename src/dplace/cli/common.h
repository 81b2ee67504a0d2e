// What the subcommands share: the flags' names for the run service's specs, and writing outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/base/status.h"
#include "dplace/report/outputs.h"
#include "dplace/run/decide.h"
#include "dplace/run/load.h"
#include "dplace/run/run.h"
#include "dplace/sim/problem.h"
#include "dplace/sim/variants.h"

namespace dplace::cli {

using GraphFlags = run::GraphSpec;
using ProblemFlags = run::ProblemSpec;
using run::LoadedProblem;

// --robust K, --robust-seed S, --robust-spread F and (place, bench) --robust-objective: the run
// service's RobustSpec (run/decide.h), its errors named by the flags.
using RobustFlags = run::RobustSpec;
StatusOr<std::pair<sim::RobustOptions, bool>> RobustFromFlags(const RobustFlags& flags);

// The run service's loaders with their errors worded for the command line: the spec field that
// went wrong ("objective: 'fast' is not ...") is named by its flag ("--objective: ...").
StatusOr<io::LoadedGraph> GraphFromFlags(const GraphFlags& flags);
StatusOr<LoadedProblem> ProblemFromFlags(const ProblemFlags& flags);
// The run service's message with its fields named as flags ("unit: ..." -> "--unit: ...").
Status WithFlagNames(const Status& status);
// run::Validate, its errors named by the flags.
StatusOr<run::ValidRequest> ValidateFromFlags(run::RunRequest request,
                                              std::vector<std::string> placers,
                                              double total_time_limit_s = 0);

// Output and CheckOutputs: base/file_util.h.

using report::FitLines;  // report/outputs.h
using report::PlanFileContent;
using report::TraceFileContent;

// Prints a JSON value to stdout (pretty, one object).
void PrintJson(const Json& j);

}  // namespace dplace::cli
