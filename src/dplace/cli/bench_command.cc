// `dplace bench --suite paper2020 | latency2020 | pipedream`: every placer of the NeurIPS 2020
// comparison on the suite's workloads (max-load, or single-sample latency for latency2020), on one
// evaluator: value, gap to the lower bound, search time.
// `dplace bench --suite models`: every step placer on the bundled models (models/*.onnx, forward
// and --training) on the k80x4, v100x8-nvlink and hetero presets, with per workload the best
// classic baseline, dplace's best and their ratio, and the geometric mean of that ratio.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/place/registry.h"
#include "dplace/place/search/score.h"
#include "dplace/report/table.h"

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
};

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
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(flags.data + "/pipedream-profiles", ec)) {
      if (e.path().string().ends_with(".graph.txt")) files.push_back(e.path().string());
    }
    if (ec) return InvalidInput(flags.data + "/pipedream-profiles: " + ec.message());
    std::sort(files.begin(), files.end());
    for (const std::string& f : files) out.push_back({io::FileStem(io::FileStem(f)), f, ""});
    for (const char* piper : {"bert32a100", "gnmt", "resnet"}) {
      out.push_back({std::string("piper/") + piper, flags.data + "/piper/" + piper + ".json", ""});
    }
    return suite;
  }
  if (flags.suite == "models") {
    suite.objective = "step";
    suite.placers.assign(std::begin(kClassic), std::end(kClassic));
    suite.placers.insert(suite.placers.end(), {"local_search", "mcmc"});
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(flags.models, ec)) {
      if (e.path().extension() == ".onnx") files.push_back(e.path().string());
    }
    if (ec) return InvalidInput(flags.models + ": " + ec.message());
    std::sort(files.begin(), files.end());
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
  return InvalidInput("--suite: '" + flags.suite +
                      "' is not paper2020, latency2020, pipedream or models");
}

// Per workload of the models suite: the best classic baseline against the best of all placers.
struct Comparison {
  std::string classic, best;         // placers
  double classic_s = 0, best_s = 0;  // their step times
  double best_gap = 0;               // of the best, to the lower bound
  bool single_within_5pct = false;   // one device already within 5% of the lower bound
  double ratio() const { return best_s / classic_s; }
};

bool Better(const report::PlacerResult& a, const report::PlacerResult& b) {
  return place::ScoreOf(a.evaluation) < place::ScoreOf(b.evaluation);
}

std::optional<Comparison> Compare(const std::vector<report::PlacerResult>& results) {
  const report::PlacerResult *classic = nullptr, *best = nullptr;
  Comparison c;
  for (const report::PlacerResult& r : results) {
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
  DPLACE_ASSIGN_OR_RETURN(const Suite suite, MakeSuite(flags));
  std::vector<std::string> placers;
  for (const std::string& name : suite.placers) {
    for (const place::PlacerEntry& e : place::Placers()) {
      if (e.name == name) placers.push_back(name);
    }
  }
  std::vector<std::pair<std::string, Comparison>> comparisons;
  std::vector<std::vector<std::string>> rows = {
      {"workload", "placer", std::string(sim::ValueName(*sim::ParseObjective(suite.objective))),
       "gap to bound", "feasible", "search time", "note"}};
  Json all = Json::array();
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
    std::vector<report::PlacerResult> results;
    for (const std::string& name : placers) {
      // The paper suites compare with the paper's own expert splits only; elsewhere the rule.
      if (name == "expert" && w.expert.empty() && flags.suite != "models") continue;
      const RunOptions options{
          .seed = flags.seed,
          .time_limit_s = flags.time_limit_s,
          .given_plan = name == "expert" && !w.expert.empty() ? &expert_plan : nullptr,
          .coarsen_ops = flags.coarsen_ops};
      auto run = RunPlacer(name, problem, options);
      if (!run.ok()) {
        rows.push_back({w.name, name, "-", "-", "-", "-", run.status().message()});
        continue;
      }
      results.push_back(std::move(run).value());
      if (!flags.json) std::cerr << "." << std::flush;
    }
    ShareBestLowerBound(&results);  // e.g. the integer program's bound holds for every placer
    Json results_json = Json::array();
    for (const report::PlacerResult& r : results) {
      char value[32], gap[32];
      std::snprintf(value, sizeof(value), "%.6g", r.evaluation.value);
      std::snprintf(gap, sizeof(gap), "%.1f%%", 100 * report::Gap(r.evaluation));
      rows.push_back({w.name, r.placer, value, gap, r.evaluation.feasible ? "yes" : "no",
                      FormatSeconds(r.search_time_s), r.note});
      results_json.push_back(report::ResultJson(problem, r));
    }
    const double bound = results.empty() ? problem.LowerBound() : results[0].evaluation.lower_bound;
    Json workload = {{"workload", w.name}, {"lower_bound", bound}, {"results", results_json}};
    if (flags.suite == "models") {
      if (auto c = Compare(results)) {
        workload["best_classic"] = {{"placer", c->classic}, {"value", c->classic_s}};
        workload["best"] = {{"placer", c->best}, {"value", c->best_s}};
        workload["ratio"] = c->ratio();
        workload["single_within_5pct"] = c->single_within_5pct;
        comparisons.push_back({w.name, *c});
      }
    }
    all.push_back(workload);
  }
  Json summary;
  if (!comparisons.empty()) summary = Summarise(comparisons);
  if (flags.json) {
    Json j = {{"suite", flags.suite}, {"workloads", all}};
    if (!comparisons.empty()) j["summary"] = summary;
    PrintJson(j);
  } else {
    std::cerr << "\n";
    std::cout << report::RenderTable(rows);
    if (!comparisons.empty()) std::cout << "\n" << ComparisonSummary(comparisons, summary);
  }
  return OkStatus();
}

}  // namespace dplace::cli
