// `dplace bench --suite paper2020 | latency2020 | pipedream`: every placer of the NeurIPS 2020
// comparison on the suite's workloads (max-load, or single-sample latency for latency2020), on one
// evaluator: value, gap to the lower bound, search time.
// `dplace bench --suite models`: every step placer on the bundled models (models/*.onnx, forward
// and --training) on the k80x4, v100x8-nvlink and hetero presets, with per workload the best
// classic baseline, dplace's best and their ratio, and the geometric mean of that ratio.
// `dplace bench --suite step-profiles`: the same comparison on measured profiles: PipeDream's 14
// (training steps) and Baechi's GNMT-v2 forward graph, on k80x4 and v100x8-nvlink.
// `--report FILE` also writes the HTML report (report/html_report.h).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "dplace/base/file_util.h"
#include "dplace/base/progress.h"
#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/place/registry.h"
#include "dplace/place/search/score.h"
#include "dplace/report/html_report.h"
#include "dplace/report/table.h"
#include "dplace/sim/step_sim.h"

namespace dplace::cli {
namespace {

struct Workload {
  std::string name;
  std::string graph;
  std::string expert;   // paper's human-expert split, if shipped
  std::string cluster;  // for workloads that do not define their machine; empty: --cluster
  bool training = false;
};

// The baselines of the RL papers and of Baechi; dplace's own placers are the others.
constexpr const char* kClassic[] = {"single", "metis",  "scotch", "expert",
                                    "heft",   "m_topo", "m_etf",  "m_sct"};
bool IsClassic(std::string_view name) {
  return std::find(std::begin(kClassic), std::end(kClassic), name) != std::end(kClassic);
}

struct Suite {
  std::vector<Workload> workloads;
  std::string objective;
  std::vector<std::string> placers;  // those built into this binary are run
  bool compare = false;              // best classic baseline against dplace's best
};

// The step-time comparison: the classic baselines, then dplace's searches.
void StepPlacers(Suite* suite) {
  suite->objective = "step";
  suite->compare = true;
  suite->placers.assign(std::begin(kClassic), std::end(kClassic));
  suite->placers.insert(suite->placers.end(),
                        {"contiguous", "chains", "local_search", "mcmc", "portfolio"});
}

StatusOr<std::vector<std::string>> FilesIn(const std::string& dir, std::string_view suffix) {
  std::vector<std::string> files;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().string().ends_with(suffix)) files.push_back(e.path().string());
  }
  if (ec) return InvalidInput(dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  return files;
}

StatusOr<Suite> MakeSuite(const BenchFlags& flags) {
  Suite suite;
  std::vector<Workload>& out = suite.workloads;
  // The paper's tables: one device, expert, PipeDream, local search, Scotch, DP, ILP.
  suite.placers = {"single", "expert", "pipedream", "local_search", "scotch", "dp", "ilp"};
  suite.objective = flags.suite == "latency2020" ? "latency" : "throughput";
  namespace fs = std::filesystem;
  if (flags.suite == "paper2020" || flags.suite == "latency2020") {
    const std::string base = flags.data + "/dnn-partitioning/";
    const std::string inputs =
        base + (flags.suite == "paper2020" ? "throughput-inputs/" : "latency-inputs/");
    for (const char* dir : {"LayerGraphs", "OperatorGraphs"}) {
      std::vector<std::string> files;
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(inputs + dir, ec)) {
        files.push_back(e.path().string());
      }
      if (ec) return InvalidInput(inputs + dir + ": " + ec.message());
      std::sort(files.begin(), files.end());
      for (const std::string& f : files) {
        Workload w{std::string(dir) + "/" + io::FileStem(f), f, ""};
        std::string stem = io::FileStem(f);
        // The paper evaluates Inception-v3 and ResNet-50 training with their inference splits.
        if (stem == "inceptionv3_training" || stem == "resnet50_training") {
          stem.replace(stem.find("training"), 8, "inference");
        }
        const std::string expert = base + "human-experts/" + stem + "_expert.json";
        if (flags.suite == "paper2020" && std::string(dir) == "LayerGraphs" && fs::exists(expert)) {
          w.expert = expert;
        }
        out.push_back(std::move(w));
      }
    }
    return suite;
  }
  if (flags.suite == "pipedream") {
    DPLACE_ASSIGN_OR_RETURN(auto files, FilesIn(flags.data + "/pipedream-profiles", ".graph.txt"));
    for (const std::string& f : files) out.push_back({io::FileStem(io::FileStem(f)), f, ""});
    for (const char* piper : {"bert32a100", "gnmt", "resnet"}) {
      out.push_back({std::string("piper/") + piper, flags.data + "/piper/" + piper + ".json", ""});
    }
    return suite;
  }
  if (flags.suite == "models") {
    StepPlacers(&suite);
    DPLACE_ASSIGN_OR_RETURN(auto files, FilesIn(flags.models, ".onnx"));
    for (const char* cluster : {"k80x4", "v100x8-nvlink", "hetero"}) {
      for (const std::string& f : files) {
        for (const bool training : {false, true}) {
          out.push_back({io::FileStem(f) + (training ? "+train" : "") + "@" + cluster, f, "",
                         cluster, training});
        }
      }
    }
    return suite;
  }
  if (flags.suite == "step-profiles") {
    StepPlacers(&suite);
    DPLACE_ASSIGN_OR_RETURN(auto files, FilesIn(flags.data + "/pipedream-profiles", ".graph.txt"));
    files.push_back(flags.data + "/baechi-gnmt/gnmt_v2_fwd.json");
    for (const char* cluster : {"k80x4", "v100x8-nvlink"}) {
      for (const std::string& f : files) {
        out.push_back({io::FileStem(io::FileStem(f)) + "@" + cluster, f, "", cluster});
      }
    }
    return suite;
  }
  return InvalidInput("--suite: '" + flags.suite +
                      "' is not paper2020, latency2020, pipedream, models or step-profiles");
}

// Per workload of the models suite: the best classic baseline against the best of all placers.
struct Comparison {
  std::string classic, best;         // placers
  double classic_s = 0, best_s = 0;  // their step times
  double best_gap = 0;               // of the best, to the lower bound
  bool single_within_5pct = false;   // one device already within 5% of the lower bound
  double ratio() const { return best_s / classic_s; }
};

bool Better(const run::PlacerResult& a, const run::PlacerResult& b) {
  return place::ScoreOf(a.evaluation) < place::ScoreOf(b.evaluation);
}

std::optional<Comparison> Compare(const std::vector<run::PlacerResult>& results) {
  const run::PlacerResult *classic = nullptr, *best = nullptr;
  Comparison c;
  for (const run::PlacerResult& r : results) {
    if (IsClassic(r.placer) && (classic == nullptr || Better(r, *classic))) classic = &r;
    if (best == nullptr || Better(r, *best)) best = &r;
    if (r.placer == "single") {
      c.single_within_5pct =
          r.evaluation.feasible && r.evaluation.value <= 1.05 * r.evaluation.lower_bound;
    }
  }
  if (classic == nullptr || !classic->evaluation.feasible) return std::nullopt;
  c.classic = classic->placer;
  c.classic_s = classic->evaluation.value;
  c.best = best->placer;
  c.best_s = best->evaluation.value;
  c.best_gap = report::Gap(best->evaluation);
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
  return report::RenderTable(rows) + line;
}

}  // namespace

Status RunBench(const BenchFlags& flags) {
  if (flags.coarsen_ops < 0) return InvalidInput("--coarsen: must not be negative");
  if (flags.evaluations < 0) return InvalidInput("--evaluations: must not be negative");
  if (!flags.report.empty()) {  // fail before the run, not after it
    const std::filesystem::path dir =
        std::filesystem::absolute(std::filesystem::path(flags.report)).parent_path();
    if (!std::filesystem::is_directory(dir)) {
      return InvalidInput("--report: " + flags.report + ": folder " + dir.string() +
                          " does not exist");
    }
  }
  DPLACE_ASSIGN_OR_RETURN(const Suite suite, MakeSuite(flags));
  DPLACE_ASSIGN_OR_RETURN(const place::PlacerOptions placer_options,
                          place::ParseOptionSpecs(flags.options));
  std::vector<std::string> placers;
  for (const std::string& name : suite.placers) {
    for (const place::PlacerEntry& e : place::Placers()) {
      if (e.name == name) placers.push_back(name);
    }
  }
  std::vector<std::pair<std::string, Comparison>> comparisons;
  std::vector<std::vector<std::string>> rows = {
      {"workload", "placer", std::string(sim::ValueName(*sim::ParseObjective(suite.objective))),
       "gap to bound", "feasible", "peak memory", "search time", "note"}};
  Json all = Json::array();
  Progress progress(static_cast<int>(suite.workloads.size() * placers.size()));
  for (const Workload& w : suite.workloads) {
    ProblemFlags pf;
    pf.graph.path = w.graph;
    pf.graph.training = w.training;
    pf.objective = suite.objective;
    auto probe = io::LoadGraph(w.graph);
    if (!probe.ok()) return probe.status();
    if (probe->cluster == nullptr) pf.cluster = w.cluster.empty() ? flags.cluster : w.cluster;
    DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, LoadProblem(pf));
    const sim::Problem& problem = *lp.problem;
    sim::Placement expert_plan;
    if (!w.expert.empty()) {
      DPLACE_ASSIGN_OR_RETURN(expert_plan, io::LoadPlan(w.expert, problem.g(), problem.c()));
    }
    std::vector<run::PlacerResult> results;
    for (const std::string& name : placers) {
      // The paper suites compare with the paper's own expert splits only; elsewhere the rule.
      if (name == "expert" && w.expert.empty() && !suite.compare) continue;
      const run::RunRequest request{
          .placer = name,
          .options = placer_options,
          .seed = flags.seed,
          .limits = {.evaluations = flags.evaluations, .seconds = flags.time_limit_s},
          .start = name == "expert" && !w.expert.empty() ? &expert_plan : nullptr,
          .coarsen_ops = flags.coarsen_ops};
      auto run = run::Run(problem, request);
      progress.Advance(w.name + " " + name);
      if (!run.ok()) {
        rows.push_back({w.name, name, "-", "-", "-", "-", "-", run.status().message()});
        continue;
      }
      results.push_back(std::move(run).value());
    }
    run::ShareBestLowerBound(&results);  // e.g. the integer program's bound holds for every placer
    Json results_json = Json::array();
    for (const run::PlacerResult& r : results) {
      char value[32], gap[32];
      std::snprintf(value, sizeof(value), "%.6g", r.evaluation.value);
      std::snprintf(gap, sizeof(gap), "%.1f%%", 100 * report::Gap(r.evaluation));
      rows.push_back({w.name, r.placer, value, gap, r.evaluation.feasible ? "yes" : "no",
                      FormatBytes(report::PeakMemory(r.evaluation)), FormatSeconds(r.search_time_s),
                      r.note});
      results_json.push_back(report::ResultJson(problem, r));
    }
    const double bound = results.empty() ? problem.LowerBound() : results[0].evaluation.lower_bound;
    Json workload = {{"workload", w.name}, {"lower_bound", bound}, {"results", results_json}};
    if (suite.compare) {
      if (auto c = Compare(results)) {
        workload["best_classic"] = {{"placer", c->classic}, {"value", c->classic_s}};
        workload["best"] = {{"placer", c->best}, {"value", c->best_s}};
        workload["ratio"] = c->ratio();
        workload["single_within_5pct"] = c->single_within_5pct;
        comparisons.push_back({w.name, *c});
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
    summary = Summarise(comparisons);
    summary_text = ComparisonSummary(comparisons, summary);
  }
  Json j = {{"suite", flags.suite}, {"workloads", all}};
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
