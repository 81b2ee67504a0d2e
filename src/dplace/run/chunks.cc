#include "dplace/run/chunks.h"

#include <cstdlib>
#include <string>

namespace dplace::run {

StatusOr<std::shared_ptr<const sim::Problem>> ProblemOn(const sim::Problem& problem,
                                                        std::shared_ptr<const hw::Cluster> cluster,
                                                        cost::CostTable costs) {
  DPLACE_ASSIGN_OR_RETURN(sim::Problem out,
                          sim::MakeProblem(problem.graph, std::move(cluster), problem.objective,
                                           std::move(costs), sim::MissingDevice::kInfeasible));
  out.lower_bound = problem.lower_bound;
  out.infeasible_reason = problem.infeasible_reason;
  out.step_model = problem.step_model;
  out.stage_memory = problem.stage_memory;
  out.schedule = problem.schedule;
  out.schedule_auto = problem.schedule_auto;
  out.virtual_stages = problem.virtual_stages;
  out.recompute = problem.recompute;
  out.microbatches = problem.microbatches;
  out.replicas_auto = problem.replicas_auto;
  out.times_in_seconds = problem.times_in_seconds;
  return std::make_shared<const sim::Problem>(std::move(out));
}

StatusOr<std::shared_ptr<const sim::Problem>> ChunkedProblem(const sim::Problem& problem,
                                                             int chunks) {
  if (chunks < 2) {
    return InvalidInput("an interleaved plan needs at least 2 chunks a device, not " +
                        std::to_string(chunks));
  }
  DPLACE_ASSIGN_OR_RETURN(
      std::shared_ptr<const sim::Problem> shared,
      ProblemOn(problem, std::make_shared<const hw::Cluster>(problem.c().Chunked(chunks)),
                problem.costs.Chunked(chunks)));
  auto chunked = std::make_shared<sim::Problem>(*shared);
  chunked->schedule = sim::PipelineSchedule::kInterleaved;
  chunked->schedule_auto = false;
  chunked->virtual_stages = chunks;
  return std::shared_ptr<const sim::Problem>(std::move(chunked));
}

StatusOr<std::shared_ptr<const sim::Problem>> GroupedProblem(
    const sim::Problem& problem, const std::vector<std::vector<sim::DeviceId>>& groups) {
  DPLACE_ASSIGN_OR_RETURN(hw::Cluster grouped, problem.c().Grouped(groups));
  std::vector<sim::DeviceId> first;
  for (const auto& group : groups) first.push_back(group.front());
  return ProblemOn(problem, std::make_shared<const hw::Cluster>(std::move(grouped)),
                   problem.costs.Mapped(first));
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
  if (sizes.size() == 1 && n % sizes[0] == 0) sizes.assign(static_cast<size_t>(n / sizes[0]), sizes[0]);
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

}  // namespace dplace::run
