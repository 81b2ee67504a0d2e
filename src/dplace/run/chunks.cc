#include "dplace/run/chunks.h"

#include <string>

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
  return sim::Changed(*shared, [chunks](sim::Problem& chunked) {
    chunked.schedule = sim::PipelineSchedule::kInterleaved;
    chunked.schedule_auto = false;
    chunked.virtual_stages = chunks;
  });
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
