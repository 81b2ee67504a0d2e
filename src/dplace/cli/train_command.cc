// `dplace train`: trains a learned placer's policy on a set of graphs and clusters (learn/train.h).
#include <algorithm>
#include <filesystem>
#include <iostream>

#include "dplace/base/file_util.h"
#include "dplace/cli/commands.h"
#include "dplace/learn/placeto.h"
#include "dplace/learn/train.h"
#include "dplace/registry/registry.h"
#include "dplace/run/load.h"
#include "dplace/run/suite.h"

namespace dplace::cli {
namespace {

bool IsGraphFile(const std::filesystem::path& p) {
  const std::string ext = p.extension().string();
  return ext == ".json" || ext == ".onnx" || ext == ".txt";
}

// (graph file, cluster, training) per training problem: files, every graph file of a folder
// (sorted by name), or a bench suite's workloads; each graph on each --cluster (a suite's workload
// on its own cluster when it names one).
struct Source {
  std::string graph, cluster;
  bool training;
};

StatusOr<std::vector<Source>> Sources(const TrainFlags& flags) {
  std::vector<Source> out;
  auto add = [&](const std::string& graph, bool training) {
    for (const std::string& c : flags.clusters) out.push_back({graph, c, training});
  };
  for (const std::string& g : flags.graphs) {
    const std::filesystem::path p(g);
    if (std::filesystem::is_directory(p)) {
      std::vector<std::string> files;
      for (const auto& entry : std::filesystem::directory_iterator(p)) {
        if (entry.is_regular_file() && IsGraphFile(entry.path())) files.push_back(entry.path());
      }
      std::sort(files.begin(), files.end());
      if (files.empty()) return InvalidInput("--graphs " + g + ": no graph files in the folder");
      for (const std::string& f : files) add(f, flags.training);
    } else if (std::filesystem::exists(p)) {
      add(g, flags.training);
    } else {
      auto suite = run::LoadSuite(
          g, DPLACE_SOURCE_DIR "/bench/suites",
          {.data = DPLACE_SOURCE_DIR "/testdata", .models = DPLACE_SOURCE_DIR "/models"});
      if (!suite.ok()) {
        return InvalidInput("--graphs " + g + ": neither a file, a folder nor a suite (" +
                            suite.status().message() + ")");
      }
      for (const run::SuiteWorkload& w : suite->workloads) {
        if (!w.cluster.empty()) {
          out.push_back({w.graph, w.cluster, w.training});
        } else {
          add(w.graph, w.training || flags.training);
        }
      }
    }
  }
  return out;
}

}  // namespace

Status RunTrain(const TrainFlags& flags) {
  if (flags.clusters.empty()) return InvalidInput("--cluster: give at least one");
  DPLACE_ASSIGN_OR_RETURN(const learn::AlgorithmOptions algorithm,
                          learn::AlgorithmByName(flags.algorithm, flags.options.algorithm));
  if (flags.options.out.empty() && flags.options.checkpoint.empty()) {
    return InvalidInput("--out: give the policy file to write (or --checkpoint)");
  }
  if (!flags.options.out.empty()) DPLACE_RETURN_IF_ERROR(CheckWritable("--out", flags.options.out));
  if (!flags.options.log.empty()) DPLACE_RETURN_IF_ERROR(CheckWritable("--log", flags.options.log));
  DPLACE_ASSIGN_OR_RETURN(const std::vector<Source> sources, Sources(flags));
  // Episodes begin where the placer's do under its default budget: the searches' start.
  DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<place::StartFinder> finder, place::SearchStart());
  std::vector<learn::TrainProblem> problems;
  for (const Source& s : sources) {
    auto loaded = run::LoadProblem({.graph = {.path = s.graph, .training = s.training},
                                    .cluster = s.cluster,
                                    .objective = "step"});
    if (!loaded.ok()) return loaded.status();
    problems.push_back(
        {std::filesystem::path(s.graph).stem().string() + "@" + s.cluster, loaded->problem});
  }
  learn::TrainOptions o = flags.options;
  o.algorithm = algorithm;
  o.start = [&](const std::shared_ptr<const sim::Problem>& problem) {
    auto evaluator = sim::MakeEvaluator(problem);
    return finder
        ->Find(*problem, {.evaluator = evaluator.get(),
                          .seed = o.seed,
                          .limits = {.evaluations = learn::kPlacetoEvaluations}})
        .placement;
  };
  auto trained = learn::Train(problems, o, flags.quiet ? nullptr : &std::cerr);
  if (!trained.ok()) return trained.status();
  if (!flags.quiet && trained->rank == 0) {
    std::cout << "trained " << flags.options.method << " on " << problems.size()
              << " problems: " << trained->updates << " updates, " << trained->episodes
              << " episodes, " << trained->evaluations << " evaluations, " << trained->cpu_seconds
              << " CPU s"
              << (trained->ranks > 1 ? " on " + std::to_string(trained->ranks) + " ranks" : "");
    if (!flags.options.out.empty()) std::cout << " -> " << flags.options.out;
    std::cout << "\n";
  }
  return OkStatus();
}

}  // namespace dplace::cli
