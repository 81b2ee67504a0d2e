// Human-readable tables for stdout: the comparison of placers, and one placement's devices.
#pragma once

#include <string>
#include <vector>

#include "dplace/report/result_json.h"

namespace dplace::report {

// Aligned text table: first column left-aligned, the others right-aligned.
// An objective's value as tables print it: step time in s/ms/us (FormatSeconds); max-load and the
// paper's latency in the input's own time unit, as a bare number (the paper's files are in theirs).
std::string FormatValue(sim::Objective objective, double value);

std::string RenderTable(const std::vector<std::vector<std::string>>& rows);

// One row per placer: value, gap to the lower bound, feasibility, busiest device memory, search
// time; the best feasible row is marked with '*'.
std::string ComparisonTable(const sim::Problem& problem, const std::vector<PlacerResult>& results,
                            int best_index);

// One row per device: ops, busy time or load, peak memory / capacity.
std::string DeviceTable(const sim::Problem& problem, const sim::Evaluation& evaluation);

}  // namespace dplace::report
