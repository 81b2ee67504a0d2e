#include "dplace/sim/objectives.h"

#include "dplace/base/spelling.h"
#include "dplace/sim/latency.h"
#include "dplace/sim/lower_bound.h"
#include "dplace/sim/max_load.h"
#include "dplace/sim/pipeline_sim.h"
#include "dplace/sim/step_sim.h"

namespace dplace::sim {
namespace {

class StepEvaluator final : public Evaluator, public IncrementalEvaluator {
 public:
  explicit StepEvaluator(std::shared_ptr<const Problem> problem)
      : Evaluator(std::move(problem)), step_(this->problem()) {}
  std::unique_ptr<Evaluator> Fork() const override {
    return std::make_unique<StepEvaluator>(shared_problem());
  }
  IncrementalEvaluator* Incremental() override { return this; }
  void SetBase(const Placement& base) override { step_.SetBase(base); }
  Evaluation EvaluateNear(const Placement& placement, double give_up_above) override {
    Count();
    return step_.RunNear(placement, give_up_above).evaluation;
  }
  std::vector<OpId> CriticalPath(const Placement& placement) override {
    Count();
    return step_.CriticalPath(placement);
  }

 private:
  Evaluation EvaluateImpl(const Placement& placement) override {
    return step_.Run(placement).evaluation;
  }
  Evaluation EvaluateTimedImpl(const Placement& placement, Timing* timing) override {
    return step_.RunTimed(placement, timing);
  }
  StepSimulator step_;
};

// The pipeline objective as a model (EvaluatePipeline keeps no buffers between calls).
class PipelineModel {
 public:
  explicit PipelineModel(const Problem& problem) : problem_(problem) {}
  Evaluation Evaluate(const Placement& placement) { return EvaluatePipeline(problem_, placement); }

 private:
  const Problem& problem_;
};

// An objective without incremental evaluation: every evaluation is `Model::Evaluate` (the
// max-load model for throughput, the call model for latency, the schedule for pipeline).
template <typename Model>
class ModelEvaluator final : public Evaluator {
 public:
  explicit ModelEvaluator(std::shared_ptr<const Problem> problem)
      : Evaluator(std::move(problem)), model_(this->problem()) {}
  std::unique_ptr<Evaluator> Fork() const override {
    return std::make_unique<ModelEvaluator>(shared_problem());
  }

 private:
  Evaluation EvaluateImpl(const Placement& placement) override {
    return model_.Evaluate(placement);
  }
  Model model_;
};

template <typename E>
std::unique_ptr<Evaluator> Make(std::shared_ptr<const Problem> problem) {
  return std::make_unique<E>(std::move(problem));
}

constexpr ObjectiveRow kTable[] = {
    {.id = Objective::kStep,
     .name = "step",
     .value_name = "step time",
     .default_for_graphs = true,
     .takes_runtime = true,
     .make_evaluator = Make<StepEvaluator>,
     .lower_bound = StepLowerBound},
    {.id = Objective::kThroughput,
     .name = "throughput",
     .value_name = "max-load",
     .default_for_paper_files = true,
     .make_evaluator = Make<ModelEvaluator<MaxLoadEvaluator>>,
     .lower_bound = ThroughputLowerBound},
    {.id = Objective::kLatency,
     .name = "latency",
     .value_name = "latency",
     .make_evaluator = Make<ModelEvaluator<LatencyEvaluator>>,
     .lower_bound = LatencyLowerBound},
    // A stage's work bounds its time per micro-batch as it bounds the max-load.
    {.id = Objective::kPipeline,
     .name = "pipeline",
     .value_name = "time per micro-batch",
     .make_evaluator = Make<ModelEvaluator<PipelineModel>>,
     .lower_bound = ThroughputLowerBound},
};

}  // namespace

std::span<const ObjectiveRow> ObjectiveTable() { return kTable; }

const ObjectiveRow& RowOf(Objective objective) {
  for (const ObjectiveRow& row : kTable) {
    if (row.id == objective) return row;
  }
  return kTable[0];  // unreachable: every objective has its row (objectives_test.cc)
}

std::string_view ObjectiveName(Objective objective) { return RowOf(objective).name; }
std::string_view ValueName(Objective objective) { return RowOf(objective).value_name; }

std::optional<Objective> ParseObjective(std::string_view name) {
  for (const ObjectiveRow& row : kTable) {
    if (row.name == name) return row.id;
  }
  return std::nullopt;
}

StatusOr<Objective> ObjectiveNamed(std::string_view name, std::string_view field) {
  if (auto o = ParseObjective(name)) return *o;
  std::vector<std::string_view> names;
  for (const auto& row : kTable) names.push_back(row.name);
  const std::string list = OneOf(names);
  return InvalidInput(std::string(field) + ": '" + std::string(name) + "' is not " + list);
}

Objective DefaultObjective(bool paper_file) {
  for (const ObjectiveRow& row : kTable) {
    if (paper_file ? row.default_for_paper_files : row.default_for_graphs) return row.id;
  }
  return Objective::kStep;
}

std::unique_ptr<Evaluator> MakeEvaluator(std::shared_ptr<const Problem> problem) {
  const Objective objective = problem->objective;
  return RowOf(objective).make_evaluator(std::move(problem));
}

}  // namespace dplace::sim
