#include "dplace/sim/evaluator.h"

#include "dplace/sim/latency.h"
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

}  // namespace

std::unique_ptr<Evaluator> MakeEvaluator(std::shared_ptr<const Problem> problem) {
  switch (problem->objective) {
    case Objective::kThroughput:
      return std::make_unique<ModelEvaluator<MaxLoadEvaluator>>(std::move(problem));
    case Objective::kLatency:
      return std::make_unique<ModelEvaluator<LatencyEvaluator>>(std::move(problem));
    case Objective::kPipeline:
      return std::make_unique<ModelEvaluator<PipelineModel>>(std::move(problem));
    case Objective::kStep:
      break;
  }
  return std::make_unique<StepEvaluator>(std::move(problem));
}

}  // namespace dplace::sim
