#include "dplace/report/bench_stats.h"

#include <cmath>
#include <cstdio>

#include "dplace/base/units.h"
#include "dplace/place/search/score.h"
#include "dplace/report/result_json.h"
#include "dplace/report/table.h"

namespace dplace::report {

// Per workload of the models suite: the best classic baseline against the best of all placers.
namespace {

bool Better(const run::PlacerResult& a, const run::PlacerResult& b) {
  return place::ScoreOf(a.evaluation) < place::ScoreOf(b.evaluation);
}

}  // namespace

std::optional<Comparison> Compare(const std::vector<run::PlacerResult>& results, double lower_bound,
                                  bool (*is_classic)(const std::string& placer)) {
  const run::PlacerResult *classic = nullptr, *best = nullptr;
  Comparison c;
  for (const run::PlacerResult& r : results) {
    if (is_classic(r.placer) && (classic == nullptr || Better(r, *classic))) classic = &r;
    if (best == nullptr || Better(r, *best)) best = &r;
    if (r.placer == "single") {
      c.single_within_5pct = r.evaluation.feasible && r.evaluation.value <= 1.05 * lower_bound;
    }
  }
  if (classic == nullptr || !classic->evaluation.feasible) return std::nullopt;
  c.classic = classic->placer;
  c.classic_s = classic->evaluation.value;
  c.best = best->placer;
  c.best_s = best->evaluation.value;
  c.best_gap = Gap(best->evaluation.value, lower_bound);
  return c;
}

// Geometric means of best / best classic: over all workloads, and over those where one device is
// not already within 5% of the lower bound (the target's set).
Json Summarise(const std::vector<std::pair<std::string, Comparison>>& comparisons) {
  double log_all = 0, log_open = 0;
  int n_all = 0, n_open = 0, worse = 0;
  for (const auto& [name, c] : comparisons) {
    const double ratio = c.ratio();
    log_all += std::log(ratio);
    ++n_all;
    worse += ratio > 1 + 1e-12;
    if (!c.single_within_5pct) {
      log_open += std::log(ratio);
      ++n_open;
    }
  }
  return {{"workloads", n_all},
          {"geomean_ratio", n_all ? std::exp(log_all / n_all) : 1.0},
          {"workloads_single_not_within_5pct", n_open},
          {"geomean_ratio_single_not_within_5pct", n_open ? std::exp(log_open / n_open) : 1.0},
          {"worse_than_best_classic", worse}};
}

std::string ComparisonSummary(const std::vector<std::pair<std::string, Comparison>>& comparisons,
                              const Json& summary) {
  std::vector<std::vector<std::string>> rows = {{"workload", "best classic", "step time",
                                                 "dplace best", "step time", "ratio",
                                                 "gap to bound"}};
  for (const auto& [name, c] : comparisons) {
    char ratio[32], gap[32];
    std::snprintf(ratio, sizeof(ratio), "%.3f%s", c.ratio(),
                  c.single_within_5pct ? " (1 dev within 5%)" : "");
    std::snprintf(gap, sizeof(gap), "%.1f%%", 100 * c.best_gap);
    rows.push_back(
        {name, c.classic, FormatSeconds(c.classic_s), c.best, FormatSeconds(c.best_s), ratio, gap});
  }
  char line[256];
  std::snprintf(line, sizeof(line),
                "geometric mean of dplace best / best classic: %.3f over %d workloads; %.3f over "
                "the %d where one device is not within 5%% of the bound; worse on %d\n",
                summary["geomean_ratio"].get<double>(), summary["workloads"].get<int>(),
                summary["geomean_ratio_single_not_within_5pct"].get<double>(),
                summary["workloads_single_not_within_5pct"].get<int>(),
                summary["worse_than_best_classic"].get<int>());
  return RenderTable(rows) + line;
}

}  // namespace dplace::report
