// Human-readable tables for stdout: the comparison of placers, and one placement's devices.
#pragma once

#include <string>
#include <vector>

#include "dplace/report/result_json.h"

namespace dplace::report {

// Aligned text table: first column left-aligned, the others right-aligned.
// An objective's value (or a device's busy time or load) as tables print it: in s/ms/us
// (FormatSeconds) where the problem's op times are seconds; the paper's files in their own time
// unit, as a bare number (Problem::times_in_seconds).
std::string FormatValue(const sim::Problem& problem, double value);

std::string RenderTable(const std::vector<std::vector<std::string>>& rows);

// The robust columns of a table, {"median of K", "worst of K"}, when some result was judged on K
// variants; else none.
std::vector<std::string> RobustHeader(const std::vector<PlacerResult>& results);
// A result's cells under RobustHeader: the median and the worst of its variants' values ("-" when
// it was not judged on variants; the worst marked "(infeasible)" when some variant is).
std::vector<std::string> RobustCells(const sim::Problem& problem, const PlacerResult& result);

// One row per placer: value, the median and worst over the robust variants (when judged on
// them), gap to the lower bound, feasibility, busiest device memory, search time; the best
// feasible row is marked with '*'.
std::string ComparisonTable(const sim::Problem& problem, const std::vector<PlacerResult>& results,
                            int best_index);

// One row per device: ops, busy time or load, peak memory / capacity.
std::string DeviceTable(const sim::Problem& problem, const sim::Evaluation& evaluation);

}  // namespace dplace::report
