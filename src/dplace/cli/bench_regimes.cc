// `dplace bench` on a suite with regimes (the learned suite, docs/learned.md): every workload runs
// the reference placer and each regime's placers at the regime's budget; each value is divided by
// the reference's (R). The summary gives, per regime, placer and split, the geometric mean of R
// over the non-trivial workloads (a workload is trivial when one device is within 5% of the lower
// bound: `single` is), the longest placement time, and for a learned placer in a regime with
// classic baselines the share of the non-trivial workloads where it is no worse than the best of
// them.
#include "dplace/cli/bench_regimes.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <map>

#include "dplace/base/file_util.h"
#include "dplace/base/progress.h"
#include "dplace/base/units.h"
#include "dplace/registry/registry.h"
#include "dplace/report/html_report.h"
#include "dplace/report/result_json.h"
#include "dplace/report/table.h"
#ifdef DPLACE_HAVE_TORCH
#include "dplace/learn/placeto.h"
#endif

namespace dplace::cli {
namespace {

struct Row {
  size_t index = 0;  // of the workload in the run (two workloads may share a name)
  std::string workload, split, regime, placer;
  double value = 0, ratio = 0, seconds = 0;
  bool feasible = false, trivial = false;
  bool learned = false, classic = false;
};

std::string Fixed(double v, const char* format = "%.3f") {
  char buf[32];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

}  // namespace

Status RunRegimeBench(const BenchFlags& flags, const run::Suite& suite) {
  if (!suite.reference)
    return InvalidInput(suite.name + ": a suite with regimes needs a reference");
  // Options per regime: the suite's, the regime's, then --opt's.
  auto options_of = [&](const run::Regime& r) {
    std::vector<std::string> specs = suite.options;
    specs.insert(specs.end(), r.options.begin(), r.options.end());
    specs.insert(specs.end(), flags.options.begin(), flags.options.end());
    return place::ParseOptionSpecs(specs);
  };
  // A regime is chosen by its name, a ladder's rung (NAME@E) also by the ladder's name.
  auto chosen = [&](const std::string& regime, const std::string& name) {
    return regime == name || regime.rfind(name + "@", 0) == 0;
  };
  std::vector<const run::Regime*> regimes = {&*suite.reference};
  for (const run::Regime& r : suite.regimes) {
    if (flags.regimes.empty() ||
        std::any_of(flags.regimes.begin(), flags.regimes.end(),
                    [&](const std::string& n) { return chosen(r.name, n); })) {
      regimes.push_back(&r);
    }
  }
  for (const std::string& name : flags.regimes) {
    bool known = false;
    for (const run::Regime& r : suite.regimes) known |= chosen(r.name, name);
    if (!known) return InvalidInput("--regimes: " + suite.name + " has no regime '" + name + "'");
  }
  // The placers a regime runs: its own, less those --placers leaves out (never the reference's).
  auto placers_of = [&](const run::Regime* r) {
    std::vector<std::string> out;
    for (const std::string& name : r->placers) {
      if (r == regimes[0] || flags.placers.empty() ||
          std::find(flags.placers.begin(), flags.placers.end(), name) != flags.placers.end()) {
        out.push_back(name);
      }
    }
    return out;
  };
  std::vector<const run::SuiteWorkload*> workloads;
  for (const run::SuiteWorkload& w : suite.workloads) {
    if (w.name.find(flags.filter) != std::string::npos) workloads.push_back(&w);
  }
  // Each regime's request checked, and its placers made, before the first workload: the
  // placers of the regime built into this binary, with its options and budget.
  int runs = 0;
  std::vector<run::ValidRequest> valid;  // per regime
  for (const run::Regime* r : regimes) {
    DPLACE_ASSIGN_OR_RETURN(const place::PlacerOptions o, options_of(*r));
    std::vector<std::string> names;
    for (const std::string& name : placers_of(r)) {
      if (place::FindPlacer(name).ok()) names.push_back(name);
    }
    runs += static_cast<int>(names.size());
    if (names.empty()) {  // nothing of it runs here
      valid.emplace_back();
      continue;
    }
    auto v = ValidateFromFlags({.options = o,
                                .seed = flags.seed,
                                .limits = {.evaluations = r->evaluations, .seconds = r->seconds},
                                .coarsen_ops = flags.coarsen_ops},
                               names);
    if (!v.ok()) return v.status().WithContext(r->name);
    valid.push_back(std::move(v).value());
  }
  std::vector<Row> rows;
  Json all = Json::array();
  Progress progress(static_cast<int>(workloads.size()) * (runs + 1));
  for (size_t index = 0; index < workloads.size(); ++index) {
    const run::SuiteWorkload& w = *workloads[index];
    ProblemFlags pf;
    pf.graph.path = w.graph;
    pf.graph.training = w.training;
    pf.objective = suite.objective;
    pf.cluster = w.cluster.empty() ? flags.cluster : w.cluster;
    DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, ProblemFromFlags(pf));
    const sim::Problem& problem = *lp.problem;
    DPLACE_ASSIGN_OR_RETURN(
        const run::PlacerResult single,
        run::Run(lp.problem,
                 {.placer = "single", .seed = flags.seed, .coarsen_ops = flags.coarsen_ops}));
    progress.Advance(w.name + " single");
    const bool trivial =
        single.evaluation.feasible && single.evaluation.value <= 1.05 * problem.LowerBound();
    double reference = 0;
    Json results = Json::array();
    for (size_t ri = 0; ri < regimes.size(); ++ri) {
      const run::Regime* r = regimes[ri];
      run::ValidRequest& v = valid[ri];
      for (size_t i = 0; i < v.placers().size(); ++i) {
        const std::string& name = v.placers()[i];
        auto entry = place::FindPlacer(name);
        auto result = run::Run(lp.problem, v.request(), v.Take(i));
        progress.Advance(w.name + " " + r->name + " " + name);
        if (!result.ok()) return result.status().WithContext(w.name + " " + r->name + " " + name);
        const sim::Evaluation& e = result->evaluation;
        if (r == regimes[0]) reference = e.value;
        Row row{.index = index,
                .workload = w.name,
                .split = w.split,
                .regime = r->name,
                .placer = name,
                .value = e.value,
                .ratio = reference > 0 ? e.value / reference : 0,
                .seconds = result->search_time_s,
                .feasible = e.feasible,
                .trivial = trivial,
                .learned = (*entry)->traits.family == place::Family::kLearned,
                .classic = (*entry)->traits.classic};
        // The result as every bench writes it (the HTML report reads it), named by its regime.
        Json one = report::ResultJson(problem, *result, run::LowerBound(problem, {*result}));
        one["placer"] = r->name + "/" + name;
        one["regime"] = r->name;
        one["ratio"] = row.ratio;
        one["evaluations"] = result->evaluations;
        results.push_back(std::move(one));
        rows.push_back(std::move(row));
      }
    }
    all.push_back({{"workload", w.name},
                   {"split", w.split},
                   {"lower_bound", problem.LowerBound()},
                   {"trivial", trivial},
                   {"results", results}});
  }

  // Per regime, placer and split: the geometric mean of R over the non-trivial feasible rows.
  struct Mean {
    double log_sum = 0;
    int n = 0, rows = 0, compared = 0, not_worse = 0;
    double max_seconds = 0;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Mean> means;
  std::vector<std::tuple<std::string, std::string, std::string>> order;
  for (const Row& r : rows) {
    const auto key = std::make_tuple(r.regime, r.placer, r.split);
    if (!means.count(key)) order.push_back(key);
    Mean& m = means[key];
    ++m.rows;
    m.max_seconds = std::max(m.max_seconds, r.seconds);
    if (!r.trivial && r.feasible && r.ratio > 0) {
      m.log_sum += std::log(r.ratio);
      ++m.n;
    }
    // Against the best classic baseline of the same regime and workload, on the rows of the mean.
    if (r.learned && !r.trivial) {
      double classic = std::numeric_limits<double>::infinity();
      for (const Row& o : rows) {
        if (o.index == r.index && o.regime == r.regime && o.classic && o.feasible) {
          classic = std::min(classic, o.value);
        }
      }
      if (std::isfinite(classic)) {  // the regime has a classic placer
        ++m.compared;
        m.not_worse += r.feasible && r.value <= classic * (1 + 1e-9);
      }
    }
  }
  std::vector<std::vector<std::string>> table = {
      {"workload", "split", "regime", "placer", "value", "R", "feasible", "time"}};
  for (const Row& r : rows) {
    table.push_back({r.workload + (r.trivial ? " (trivial)" : ""), r.split, r.regime, r.placer,
                     Fixed(r.value, "%.6g"), Fixed(r.ratio), r.feasible ? "yes" : "no",
                     FormatSeconds(r.seconds)});
  }
  std::vector<std::vector<std::string>> summary = {{"regime", "placer", "split", "geomean R",
                                                    "rows", "not worse than best classic",
                                                    "longest time"}};
  Json summary_json = Json::array();
  for (const auto& key : order) {
    const Mean& m = means[key];
    const auto& [regime, placer, split] = key;
    const double g = m.n > 0 ? std::exp(m.log_sum / m.n) : 0;
    summary.push_back(
        {regime, placer, split, m.n > 0 ? Fixed(g) : "-",
         std::to_string(m.n) + " of " + std::to_string(m.rows),
         m.compared > 0 ? std::to_string(m.not_worse) + " of " + std::to_string(m.compared) : "",
         FormatSeconds(m.max_seconds)});
    Json s = {{"regime", regime},
              {"placer", placer},
              {"split", split},
              {"geomean_ratio", g},
              {"rows", m.n},
              {"all_rows", m.rows},
              {"longest_seconds", m.max_seconds}};
    if (m.compared > 0) {
      s["not_worse_than_classic"] = m.not_worse;
      s["compared_with_classic"] = m.compared;
    }
    summary_json.push_back(s);
  }
  std::string training;
#ifdef DPLACE_HAVE_TORCH
  training = learn::PolicyTrainingNote(learn::DefaultPolicyPath());
#endif
  Json j = {{"suite", suite.name},
            {"reference", suite.reference->placers[0]},
            {"workloads", all},
            {"summary", summary_json}};
  if (!training.empty()) j["policy_training"] = training;
  const std::string text =
      report::RenderTable(summary) + (training.empty() ? "" : "bundled policy: " + training + "\n");
  if (!flags.report.empty()) {
    DPLACE_RETURN_IF_ERROR(WriteFileAtomically(flags.report, report::HtmlReport(j, text)));
  }
  if (flags.json) {
    PrintJson(j);
  } else {
    std::cout << report::RenderTable(table) << "\nR = value / " << suite.reference->placers[0]
              << " at " << suite.reference->seconds << " s; trivial rows left out of the means\n"
              << text;
    if (!flags.report.empty()) std::cout << "report written to " << flags.report << "\n";
  }
  return OkStatus();
}

}  // namespace dplace::cli
