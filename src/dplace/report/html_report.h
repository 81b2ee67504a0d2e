// `dplace bench --report FILE`: one self-contained HTML page (inline CSS and SVG, no external
// resources) with, per workload, the table of every placer (value, gap, feasibility, peak memory,
// search time, note), a bar chart of their values against the lower bound, and the timeline of
// the best placement's step. A short script checks on load that every chart laid out (it sets
// data-rendered on <body>), so a headless browser can tell that the page rendered.
#pragma once

#include <string>

#include "dplace/base/json_node.h"
#include "dplace/sim/evaluation.h"
#include "dplace/sim/problem.h"

namespace dplace::report {

// The step of one placement for the report: {"makespan_s", "devices": [names], "ops": [[device,
// start_s, end_s, op name], ...], "transfers": [[src, dst, start_s, end_s], ...]}. Intervals
// closer than a pixel of a 1000-pixel-wide chart on one lane are merged, so that the page stays
// small on graphs of any size.
Json TimelineJson(const sim::Problem& problem, const sim::Timeline& timeline);

// `bench`: the document `dplace bench --json` prints ({"suite", "workloads": [{"workload",
// "lower_bound", "results": [ResultJson...], "timeline"?: TimelineJson, ...}], "summary"?}).
// `summary`: text shown under the title (may be empty).
std::string HtmlReport(const Json& bench, const std::string& summary);

}  // namespace dplace::report
