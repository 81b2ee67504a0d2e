// `dplace train`: trains a learned placer's policy on a set of graphs and clusters: the flags as a
// run::TrainRequest (run/train.h), errors naming the flags.
#include <algorithm>
#include <iostream>

#include "dplace/cli/commands.h"
#include "dplace/run/train.h"

namespace dplace::cli {

Status RunTrain(const TrainFlags& flags) {
  run::TrainRequest request{.graphs = flags.graphs,
                            .clusters = flags.clusters,
                            .training = flags.training,
                            .algorithm = flags.given.count("--algorithm") ? flags.algorithm : "",
                            .options = flags.options,
                            .imitate = flags.imitate,
                            .labels = flags.labels,
                            .relabel = flags.relabel,
                            .improving = flags.improving,
                            .suites = DPLACE_SOURCE_DIR "/bench/suites",
                            .suite_folders = {.data = DPLACE_SOURCE_DIR "/testdata",
                                              .models = DPLACE_SOURCE_DIR "/models"}};
  for (const std::string& flag : flags.given) {
    std::string field = flag.substr(2);
    std::replace(field.begin(), field.end(), '-', '_');
    request.given.insert(field);
  }
  // The request's fields are the flags: lr_end is --lr-end.
  const auto flag = [](std::string_view field) {
    std::string f = "--" + std::string(field);
    std::replace(f.begin(), f.end(), '_', '-');
    return f;
  };
  DPLACE_ASSIGN_OR_RETURN(const run::Trained trained,
                          run::Train(std::move(request), flags.quiet ? nullptr : &std::cerr, flag));
  const learn::TrainResult& r = trained.result;
  if (!flags.quiet && r.rank == 0) {
    std::cout << "trained " << flags.options.method << " (hidden " << trained.hidden << ", "
              << trained.algorithm << ", lr " << trained.lr << ") on " << trained.problems
              << " problems: " << r.updates << " updates, " << r.episodes << " episodes, "
              << r.evaluations << " evaluations, " << r.cpu_seconds << " CPU s"
              << (r.ranks > 1 ? " on " + std::to_string(r.ranks) + " ranks" : "");
    if (!flags.options.out.empty()) std::cout << " -> " << flags.options.out;
    std::cout << "\n";
  }
  return OkStatus();
}

}  // namespace dplace::cli
