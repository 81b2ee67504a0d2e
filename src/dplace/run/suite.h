// Bench suites as data: a dplace-suite/1 manifest (bench/suites/NAME.json) names the objective,
// the placers and the workloads of a suite; LoadSuite expands its file patterns into workloads.
// The format is in docs/formats.md.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "dplace/base/status.h"

namespace dplace::run {

struct SuiteWorkload {
  std::string name;
  std::string graph;    // file
  std::string expert;   // a human-expert plan for `expert`; empty: none
  std::string cluster;  // preset or file; empty: the graph's own machine, else the bench's default
  bool training = false;
  std::string split;  // which test split it belongs to (learned suite); empty: none
};

// A budget regime of a suite that compares placers at several budgets (the learned suite): its
// placers run with these limits and options (after the suite's); the reference is one placer
// whose value divides every other (R).
struct Regime {
  std::string name;
  std::vector<std::string> placers;
  double seconds = 0;
  int64_t evaluations = 0;
  std::vector<std::string> options;
};

struct Suite {
  std::string name;
  std::string description;
  std::string objective;
  std::vector<std::string> placers;  // those built into this binary are run
  std::vector<std::string> options;  // placer options, "placer.key=value" (as --opt)
  // Compare the best classic baseline (PlacerTraits::classic) with the best of all.
  bool compare = false;
  // Run `expert` on workloads without a plan (its rule); false: only where the suite has a plan.
  bool expert_rule = true;
  std::vector<SuiteWorkload> workloads;
  // With regimes, each workload runs every regime (and the reference) instead of `placers`.
  std::optional<Regime> reference;
  std::vector<Regime> regimes;
};

// Where the placeholders of a manifest point: {data} and {models}.
struct SuiteFolders {
  std::string data;
  std::string models;
};

// `suite` is a name (a manifest in `manifests`) or a manifest file (ending in .json).
// InvalidInput for an unknown name (listing the known ones), a bad manifest (file, place,
// problem) or a pattern that matches no file.
StatusOr<Suite> LoadSuite(const std::string& suite, const std::string& manifests,
                          const SuiteFolders& folders);

}  // namespace dplace::run
