#include "dplace/run/replicas.h"

#include <cstdlib>
#include <string>

#include "dplace/place/exact/exact.h"
#include "dplace/place/search/score.h"

namespace dplace::run {

StatusOr<std::vector<int>> ParseReplicaDegrees(std::string_view spec) {
  std::vector<int> sizes;
  std::string_view rest = spec;
  while (true) {
    const size_t comma = rest.find(',');
    const std::string item(rest.substr(0, comma));
    char* end = nullptr;
    const long size = std::strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || size < 1 || size > 4096) {
      return InvalidInput("replicas: '" + item +
                          "' is not a number of devices from 1 to 4096 (nor is '" +
                          std::string(spec) + "' auto)");
    }
    sizes.push_back(static_cast<int>(size));
    if (comma == std::string_view::npos) return sizes;
    rest = rest.substr(comma + 1);
  }
}

StatusOr<std::vector<std::vector<sim::DeviceId>>> ReplicaGroups(const hw::Cluster& cluster,
                                                                std::string_view spec) {
  const int n = cluster.num_devices();
  DPLACE_ASSIGN_OR_RETURN(std::vector<int> sizes, ParseReplicaDegrees(spec));
  if (sizes.size() == 1 && n % sizes[0] == 0)
    sizes.assign(static_cast<size_t>(n / sizes[0]), sizes[0]);
  int total = 0;
  for (int s : sizes) total += s;
  if (total != n) {
    return InvalidInput("replicas: '" + std::string(spec) + "' groups " + std::to_string(total) +
                        " devices, and " + cluster.name() + " has " + std::to_string(n));
  }
  std::vector<std::vector<sim::DeviceId>> groups;
  int next = 0;
  for (int s : sizes) {
    groups.emplace_back();
    for (int i = 0; i < s; ++i) groups.back().push_back(sim::DeviceId(next++));
  }
  return groups;
}

StatusOr<std::shared_ptr<const sim::Problem>> PlanReplicas(
    const std::shared_ptr<const sim::Problem>& problem, const place::Limits& limits,
    std::string* note) {
  if (!problem->replicas_auto) return problem;
  const std::shared_ptr<const sim::Problem> one_each =
      sim::Changed(*problem, [](sim::Problem& plain) { plain.replicas_auto = false; });
  // dp's split with replicas and without, each in half the limits, each judged as it runs.
  place::Limits half = limits;
  half.seconds /= 2;
  if (half.evaluations > 0) half.evaluations = (half.evaluations + 1) / 2;
  auto split_by_dp =
      [&](const std::shared_ptr<const sim::Problem>& p) -> StatusOr<place::PlaceResult> {
    const std::unique_ptr<place::Placer> dp = place::MakeDpPlacer();
    const std::unique_ptr<sim::Evaluator> evaluator = sim::MakeEvaluator(p);
    return dp->Place(*p, {.evaluator = evaluator.get(), .limits = half});
  };
  auto split = split_by_dp(problem);
  if (!split.ok()) {
    *note = "replicas: one a stage (dp chooses them, and " + split.status().message() + ")";
    return one_each;
  }
  if (split->groups.empty()) {
    *note = "replicas: one a stage (dp's best split)";
    return one_each;
  }
  DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<const sim::Problem> grouped,
                          sim::GroupedProblem(*problem, split->groups));
  const sim::Evaluation with =
      sim::MakeEvaluator(grouped)->Evaluate(sim::GroupedPlacement(split->placement, split->groups));
  std::string names;
  for (const hw::Device& d : grouped->c().devices()) {
    names += (names.empty() ? "" : ", ") + d.name;
  }
  // Replicas only where they pay: dp's split of one replica a stage may judge faster than the
  // split its max-load model chose with replicas.
  auto without = split_by_dp(one_each);
  const bool faster_without =
      without.ok() && place::ScoreOf(sim::MakeEvaluator(one_each)->Evaluate(without->placement)) <
                          place::ScoreOf(with);
  if (!with.feasible || faster_without) {
    *note = "replicas: one a stage (dp's split on " + names + " is no faster)";
    return one_each;
  }
  *note = "replicas: dp chose " + names;
  return grouped;
}

}  // namespace dplace::run
