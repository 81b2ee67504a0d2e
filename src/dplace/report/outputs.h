// What `place` writes and prints beside its tables, for the CLI and Python alike: the plan file's
// and the Chrome trace's content, and the lines on whether the step fits one device and what data
// parallelism would give.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "dplace/run/run.h"
#include "dplace/sim/problem.h"

namespace dplace::report {

// The plan file's content (dplace-plan/1, or the paper's split format when `format` is
// "paper-split"); `lower_bound`, the run's (run::LowerBound).
std::string PlanFileContent(const std::string& format, const sim::Problem& problem,
                            const run::PlacerResult& result, double lower_bound);

// Simulates the step of `placement` with a timeline: the Chrome trace's content.
std::string TraceFileContent(const sim::Problem& problem, const sim::Placement& placement);

// Lines on whether the step fits one device of each kind (sim/fit.h) and what data parallelism
// would give; with a chosen placement, its time per sample beside it and, where it leaves the
// accelerators (puts ops on a CPU) while the step does not fit one accelerator, the line that says
// so. `batch` 0: unknown.
std::vector<std::string> FitLines(const sim::Problem& problem, int64_t batch,
                                  const sim::Placement* chosen = nullptr, double chosen_s = 0);

}  // namespace dplace::report
