// Training a learned placer's policy as a user names it, for `dplace train` and Python's
// dplace.train alike: graph files, folders of them or bench suites, each graph on each cluster;
// the method's hyper-parameters for those not given (learn/methods.h); imitation labels from a
// search, cached by content; every output checked against every input before any work
// (base/file_util.h). Built with LibTorch only (DPLACE_HAVE_TORCH).
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/learn/train.h"
#include "dplace/run/suite.h"

namespace dplace::run {

struct TrainRequest {
  std::vector<std::string> graphs;    // files, folders (every .json/.onnx/.txt) or bench suites
  std::vector<std::string> clusters;  // each graph on each (a suite's workload on its own)
  bool training = false;              // expand ONNX graphs into training steps
  std::string algorithm;              // reinforce or ppo; empty: the method's
  learn::TrainOptions options;        // method, budgets, files, hyper-parameters
  // Which of hidden, lr and max_grad_norm were given: the others are the method's defaults.
  std::set<std::string> given;
  // Imitation: label each problem with mcmc's best placement at this many evaluations (0: policy
  // gradients instead), cached in the folder `labels` when given; `relabel`: the labels' search
  // starts from `options.init`'s placement (expert iteration); `improving`: labels carry the
  // moves the search kept that improved its placement (learn::TrainOptions::Label::steps).
  int64_t imitate = 0;
  std::string labels;
  bool relabel = false, improving = false;
  // Where bench suites are found (empty: graphs name files and folders only).
  std::string suites;
  SuiteFolders suite_folders;
};

// What was trained with what: the result, and the hyper-parameters used.
struct Trained {
  learn::TrainResult result;
  int problems = 0;
  int hidden = 0;
  double lr = 0;
  std::string algorithm;
};

// Checks the request (InvalidInput naming the field as `name` spells it: the request's own field
// names by default, "--lr" from the command line), loads the problems, labels them when asked,
// and trains; progress lines go to `progress` (null: none).
StatusOr<Trained> Train(
    TrainRequest request, std::ostream* progress,
    const std::function<std::string(std::string_view field)>& name = [](std::string_view f) {
      return std::string(f);
    });

}  // namespace dplace::run
