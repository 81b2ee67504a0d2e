// `dplace bench --suite NAME`: the placers of a suite (bench/suites/NAME.json, run/suite.h) on its
// workloads, each judged on one evaluator: value, gap to the lower bound, search time; for a suite
// that compares, per workload the best classic baseline against the best of all and the geometric
// mean of their ratio (report/bench_stats.h). `--report FILE` also writes the HTML report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "dplace/base/file_util.h"
#include "dplace/base/progress.h"
#include "dplace/base/units.h"
#include "dplace/cli/bench_regimes.h"
#include "dplace/cli/commands.h"
#include "dplace/place/search/score.h"
#include "dplace/registry/registry.h"
#include "dplace/report/bench_stats.h"
#include "dplace/report/html_report.h"
#include "dplace/report/table.h"
#include "dplace/run/suite.h"
#include "dplace/sim/step_sim.h"

namespace dplace::cli {
namespace {

// Whether the table marks `placer` as a classic baseline (of the RL papers and Baechi).
bool IsClassic(const std::string& placer) {
  auto entry = place::FindPlacer(placer);
  return entry.ok() && (*entry)->traits.classic;
}

bool Better(const run::PlacerResult& a, const run::PlacerResult& b) {
  return place::ScoreOf(a.evaluation) < place::ScoreOf(b.evaluation);
}

}  // namespace

Status RunBench(const BenchFlags& flags) {
  DPLACE_ASSIGN_OR_RETURN(const auto robust, RobustFromFlags(flags.robust));
  DPLACE_ASSIGN_OR_RETURN(
      const run::Suite suite,
      run::LoadSuite(flags.suite, flags.suites, {.data = flags.data, .models = flags.models}));
  // Before the run, not after it: the report's folder can be written, and it is not the suite
  // file just read (nor, when written, any workload the run read).
  DPLACE_RETURN_IF_ERROR(CheckOutputs({{"--report", flags.report}}, {}));
  if (!suite.regimes.empty()) {
    if (flags.robust.variants > 0) {
      return InvalidInput("--robust: not for suites with regimes ('" + suite.name + "')");
    }
    return RunRegimeBench(flags, suite);
  }
  // The manifest's options, then --opt's (which win).
  std::vector<std::string> specs = suite.options;
  specs.insert(specs.end(), flags.options.begin(), flags.options.end());
  DPLACE_ASSIGN_OR_RETURN(const place::PlacerOptions placer_options,
                          place::ParseOptionSpecs(specs));
  std::vector<std::string> placers;  // those of the suite built into this binary
  for (const std::string& name : suite.placers) {
    if (place::FindPlacer(name).ok()) placers.push_back(name);
  }
  // Bad limits and options fail before the first workload; each placement takes its placer.
  DPLACE_ASSIGN_OR_RETURN(run::ValidRequest valid,
                          ValidateFromFlags({.options = placer_options,
                                             .seed = flags.seed,
                                             .limits = {.evaluations = flags.evaluations,
                                                        .seconds = flags.time_limit_s},
                                             .coarsen_ops = flags.coarsen_ops,
                                             .robust = robust.first,
                                             .optimise_robust = robust.second},
                                            placers));
  std::vector<std::pair<std::string, report::Comparison>> comparisons;
  std::vector<std::vector<std::string>> rows = {
      {"workload", "placer", std::string(sim::ValueName(*sim::ParseObjective(suite.objective)))}};
  if (robust.first.count > 0) {
    const std::string k = std::to_string(robust.first.count);
    rows[0].insert(rows[0].end(), {"median of " + k, "worst of " + k});
  }
  rows[0].insert(rows[0].end(), {"gap to bound", "feasible", "peak memory", "search time", "note"});
  Json all = Json::array();
  Progress progress(static_cast<int>(suite.workloads.size() * placers.size()));
  for (const run::SuiteWorkload& w : suite.workloads) {
    ProblemFlags pf;
    pf.graph.path = w.graph;
    pf.graph.training = w.training;
    pf.objective = suite.objective;
    auto probe = io::LoadGraph(w.graph);
    if (!probe.ok()) return probe.status();
    if (probe->cluster == nullptr) pf.cluster = w.cluster.empty() ? flags.cluster : w.cluster;
    DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, ProblemFromFlags(pf));
    const sim::Problem& problem = *lp.problem;
    sim::Placement expert_plan;
    if (!w.expert.empty()) {
      DPLACE_ASSIGN_OR_RETURN(expert_plan, io::LoadPlan(w.expert, problem.g(), problem.c()));
    }
    std::vector<run::PlacerResult> results;
    for (size_t i = 0; i < placers.size(); ++i) {
      const std::string& name = placers[i];
      // The paper suites compare with the paper's own expert splits only; elsewhere the rule.
      if (name == "expert" && w.expert.empty() && !suite.expert_rule) continue;
      run::RunRequest request = valid.request();
      if (name == "expert" && !w.expert.empty()) request.start = &expert_plan;
      auto run = run::Run(lp.problem, request, valid.Take(i));
      progress.Advance(w.name + " " + name);
      if (!run.ok()) {
        std::vector<std::string> row(rows[0].size(), "-");
        row.front() = w.name;
        row[1] = name;
        row.back() = run.status().message();
        rows.push_back(std::move(row));
        continue;
      }
      results.push_back(std::move(run).value());
    }
    // e.g. the integer program's bound holds for every placer
    const double bound = run::LowerBound(problem, results);
    Json results_json = Json::array();
    for (const run::PlacerResult& r : results) {
      char value[32], gap[32];
      std::snprintf(value, sizeof(value), "%.6g", r.evaluation.value);
      std::snprintf(gap, sizeof(gap), "%.1f%%", 100 * report::Gap(r.evaluation.value, bound));
      std::vector<std::string> row = {w.name, r.placer, value};
      if (robust.first.count > 0) {  // in the value column's format
        char median[32], worst[32];
        std::snprintf(median, sizeof(median), "%.6g", r.robust->median);
        std::snprintf(worst, sizeof(worst), "%.6g", r.robust->worst);
        row.insert(row.end(),
                   {median, std::string(worst) + (r.robust->feasible ? "" : " (infeasible)")});
      }
      row.insert(row.end(), {gap, r.evaluation.feasible ? "yes" : "no",
                             FormatBytes(report::PeakMemory(r.evaluation)),
                             FormatSeconds(r.search_time_s), r.note});
      rows.push_back(std::move(row));
      results_json.push_back(report::ResultJson(problem, r, bound));
    }
    Json workload = {{"workload", w.name}, {"lower_bound", bound}, {"results", results_json}};
    if (suite.compare) {
      if (auto c = report::Compare(results, bound, IsClassic)) {
        workload["best_classic"] = {{"placer", c->classic}, {"value", c->classic_s}};
        workload["best"] = {{"placer", c->best}, {"value", c->best_s}};
        workload["ratio"] = c->ratio();
        workload["single_within_5pct"] = c->single_within_5pct;
        comparisons.emplace_back(w.name, *c);
      }
    }
    if (!flags.report.empty() && problem.objective == sim::Objective::kStep && !results.empty()) {
      const run::PlacerResult* best = &results[0];
      for (const run::PlacerResult& r : results) {
        if (Better(r, *best)) best = &r;
      }
      const sim::StepResult step =
          sim::SimulateStep(problem, best->placement, {.record_timeline = true});
      workload["timeline"] = report::TimelineJson(problem, step.timeline);
    }
    all.push_back(workload);
  }
  Json summary;
  std::string summary_text;
  if (!comparisons.empty()) {
    summary = report::Summarise(comparisons);
    summary_text = report::ComparisonSummary(comparisons, summary);
  }
  Json j = {{"suite", suite.name}, {"workloads", all}};
  if (!comparisons.empty()) j["summary"] = summary;
  if (!flags.report.empty()) {
    DPLACE_RETURN_IF_ERROR(WriteFileAtomically(flags.report, report::HtmlReport(j, summary_text)));
  }
  if (flags.json) {
    for (Json& w : j["workloads"]) w.erase("timeline");
    PrintJson(j);
  } else {
    std::cout << report::RenderTable(rows);
    if (!comparisons.empty()) std::cout << "\n" << summary_text;
    if (!flags.report.empty()) std::cout << "report written to " << flags.report << "\n";
  }
  return OkStatus();
}

}  // namespace dplace::cli
