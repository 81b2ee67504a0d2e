// Interleaved plans: under an interleaved schedule each device of the pipeline runs V chunks of
// the model, chunk k of the S x V on device k mod S (sim/schedules.h). A placer plans them on the
// chunked problem, whose S x V devices are the chunks (hw::Cluster::Chunked: copies of the
// devices, each with a V-th of its memory), searching with the problem's own evaluator on every
// plan mapped back (ChunkedEvaluator, a decorator like the robust one); FromChunks maps the plan
// back. Run (run.h) does this for every placer when the problem's schedule interleaves.
#pragma once

#include <memory>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/place/placer.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/problem.h"

namespace dplace::run {

// `problem` on its cluster chunked `chunks` ways, with the interleaved schedule of that many
// chunks and the problem's lower bound. InvalidInput when chunks < 2.
StatusOr<std::shared_ptr<const sim::Problem>> ChunkedProblem(const sim::Problem& problem,
                                                             int chunks);

// A plan of the chunked problem as a plan of `problem`: chunk device k on device k mod S.
sim::Placement FromChunks(const sim::Problem& problem, const sim::Placement& chunked);

// Judges plans of `chunked` by `evaluator` (of the problem it was chunked from) on them mapped
// back: the value and memory of the plan as its devices run it; each chunk device reports its
// device's figures but its own op count. One evaluation each.
class ChunkedEvaluator final : public sim::Evaluator {
 public:
  ChunkedEvaluator(std::shared_ptr<const sim::Problem> chunked,
                   std::unique_ptr<sim::Evaluator> evaluator)
      : Evaluator(std::move(chunked)), evaluator_(std::move(evaluator)) {}
  std::unique_ptr<Evaluator> Fork() const override {
    return std::make_unique<ChunkedEvaluator>(shared_problem(), evaluator_->Fork());
  }

 private:
  sim::Evaluation EvaluateImpl(const sim::Placement& placement) override;

  std::unique_ptr<sim::Evaluator> evaluator_;
};

}  // namespace dplace::run
