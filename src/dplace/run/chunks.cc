#include "dplace/run/chunks.h"

#include <cstdlib>
#include <string>

#include "dplace/place/search/score.h"
#include "dplace/registry/registry.h"

namespace dplace::run {

StatusOr<std::shared_ptr<const sim::Problem>> ChunkedProblem(const sim::Problem& problem,
                                                             int chunks) {
  if (chunks < 2) {
    return InvalidInput("an interleaved plan needs at least 2 chunks a device, not " +
                        std::to_string(chunks));
  }
  DPLACE_ASSIGN_OR_RETURN(
      std::shared_ptr<const sim::Problem> shared,
      sim::ProblemOn(problem, std::make_shared<const hw::Cluster>(problem.c().Chunked(chunks)),
                     problem.costs.Chunked(chunks)));
  auto chunked = std::make_shared<sim::Problem>(*shared);
  chunked->schedule = sim::PipelineSchedule::kInterleaved;
  chunked->schedule_auto = false;
  chunked->virtual_stages = chunks;
  return std::shared_ptr<const sim::Problem>(std::move(chunked));
}

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

sim::Placement FromChunks(const sim::Problem& problem, const sim::Placement& chunked) {
  const size_t n = problem.c().devices().size();
  sim::Placement out;
  out.reserve(chunked.size());
  for (sim::DeviceId d : chunked) out.push_back(sim::DeviceId(static_cast<int32_t>(d.index() % n)));
  return out;
}

sim::Evaluation ChunkedEvaluator::EvaluateImpl(const sim::Placement& placement) {
  sim::Evaluation e = evaluator_->Evaluate(FromChunks(evaluator_->problem(), placement));
  const size_t n = evaluator_->problem().c().devices().size();
  sim::PerDevice<sim::DeviceReport> chunks(problem().c().devices().size());
  for (sim::DeviceId d : problem().c().device_ids()) {
    chunks[d] = e.devices[sim::DeviceId(static_cast<int32_t>(d.index() % n))];
    chunks[d].ops = 0;
  }
  for (sim::DeviceId d : placement) ++chunks[d].ops;
  e.devices = std::move(chunks);
  return e;
}

StatusOr<std::shared_ptr<const sim::Problem>> PlanReplicas(
    const std::shared_ptr<const sim::Problem>& problem, const place::Limits& limits,
    std::string* note) {
  if (!problem->replicas_auto) return problem;
  auto plain = std::make_shared<sim::Problem>(*problem);
  plain->replicas_auto = false;
  std::shared_ptr<const sim::Problem> one_each = std::move(plain);
  // dp's split with replicas and without, each in half the limits, each judged as it runs.
  place::Limits half = limits;
  half.seconds /= 2;
  if (half.evaluations > 0) half.evaluations = (half.evaluations + 1) / 2;
  auto split_by_dp =
      [&](const std::shared_ptr<const sim::Problem>& p) -> StatusOr<place::PlaceResult> {
    DPLACE_ASSIGN_OR_RETURN(place::Member dp, place::MakePlacer("dp"));
    const std::unique_ptr<sim::Evaluator> evaluator = sim::MakeEvaluator(p);
    return dp.placer->Place(*p, {.evaluator = evaluator.get(), .limits = half});
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
