// What the subcommands share: the flags' names for the run service's specs, and writing outputs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dplace/base/json_node.h"
#include "dplace/base/status.h"
#include "dplace/run/load.h"
#include "dplace/run/run.h"
#include "dplace/sim/problem.h"
#include "dplace/sim/variants.h"

namespace dplace::cli {

using GraphFlags = run::GraphSpec;
using ProblemFlags = run::ProblemSpec;
using run::LoadedProblem;

// Judging plans on variants of the model (sim/variants.h): --robust K, --robust-seed S,
// --robust-spread F, and (place, bench) --robust-objective worst|median|qQ.
struct RobustFlags {
  int variants = 0;       // --robust K; 0: no robust judgement
  std::string objective;  // --robust-objective; empty: searches keep to the problem's own value
  uint64_t seed = 1;      // --robust-seed: of the variants' noise
  double spread = 0.1;    // --robust-spread: of the noise on op times and bandwidths
};

// The robust part of a run request from the flags: the variants' options and whether searches
// minimise the robust value. InvalidInput naming the flag: K outside 0..64, a spread outside
// [0, 2], an objective that is not worst, median or qQ (0 < Q <= 1), an objective without K.
StatusOr<std::pair<sim::RobustOptions, bool>> RobustFromFlags(const RobustFlags& flags);

// The run service's loaders with their errors worded for the command line: the spec field that
// went wrong ("objective: 'fast' is not ...") is named by its flag ("--objective: ...").
StatusOr<io::LoadedGraph> GraphFromFlags(const GraphFlags& flags);
StatusOr<LoadedProblem> ProblemFromFlags(const ProblemFlags& flags);

// The plan file's content (dplace-plan/1, or the paper's split format when `format` is
// "paper-split").
std::string PlanFileContent(const std::string& format, const sim::Problem& problem,
                            const run::PlacerResult& result);

// Simulates the step of `placement` with a timeline: the Chrome trace's content.
std::string TraceFileContent(const sim::Problem& problem, const sim::Placement& placement);

// Before any work: every output path can be written, and no two are the same file.
// `outputs` are (flag, path) pairs; empty paths are outputs not asked for.
Status CheckOutputs(const std::vector<std::pair<std::string, std::string>>& outputs);

// Lines on whether the step fits one device of each kind (sim/fit.h) and what data parallelism
// would give; with a chosen placement, its time per sample beside it and, where it leaves the
// accelerators (puts ops on a CPU) while the step does not fit one accelerator, the line that says
// so. `batch` 0: unknown.
std::vector<std::string> FitLines(const sim::Problem& problem, int64_t batch,
                                  const sim::Placement* chosen = nullptr, double chosen_s = 0);

// Prints a JSON value to stdout (pretty, one object).
void PrintJson(const Json& j);

}  // namespace dplace::cli
