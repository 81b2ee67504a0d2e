// `dplace bench --suite paper2020 | latency2020 | pipedream`: every placer of the NeurIPS 2020
// comparison on the suite's workloads (max-load, or single-sample latency for latency2020), on one
// evaluator: value, gap to the lower bound, search time.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "dplace/base/units.h"
#include "dplace/cli/commands.h"
#include "dplace/place/registry.h"
#include "dplace/report/table.h"

namespace dplace::cli {
namespace {

struct Workload {
  std::string name;
  std::string graph;
  std::string expert;  // paper's human-expert split, if shipped
};

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
  return InvalidInput("--suite: '" + flags.suite + "' is not paper2020, latency2020 or pipedream");
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
  std::vector<std::vector<std::string>> rows = {
      {"workload", "placer", std::string(sim::ValueName(*sim::ParseObjective(suite.objective))),
       "gap to bound", "feasible", "search time", "note"}};
  Json all = Json::array();
  for (const Workload& w : suite.workloads) {
    ProblemFlags pf;
    pf.graph.path = w.graph;
    pf.objective = suite.objective;
    auto probe = io::LoadGraph(w.graph);
    if (!probe.ok()) return probe.status();
    if (probe->cluster == nullptr) pf.cluster = flags.cluster;
    DPLACE_ASSIGN_OR_RETURN(LoadedProblem lp, LoadProblem(pf));
    const sim::Problem& problem = *lp.problem;
    sim::Placement expert_plan;
    if (!w.expert.empty()) {
      DPLACE_ASSIGN_OR_RETURN(expert_plan, io::LoadPlan(w.expert, problem.g(), problem.c()));
    }
    std::vector<report::PlacerResult> results;
    for (const std::string& name : placers) {
      if (name == "expert" && w.expert.empty()) continue;
      const RunOptions options{.seed = flags.seed,
                               .time_limit_s = flags.time_limit_s,
                               .given_plan = w.expert.empty() ? nullptr : &expert_plan};
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
    all.push_back({{"workload", w.name}, {"lower_bound", bound}, {"results", results_json}});
  }
  if (flags.json) {
    PrintJson({{"suite", flags.suite}, {"workloads", all}});
  } else {
    std::cerr << "\n";
    std::cout << report::RenderTable(rows);
  }
  return OkStatus();
}

}  // namespace dplace::cli
