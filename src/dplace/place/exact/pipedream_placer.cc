// `pipedream`: PipeDream's planner (Narayanan et al., SOSP 2019) as the NeurIPS 2020 paper ran it
// for comparison: the optimal split of one linear order of the layers (each stage a run of
// consecutive layers), without replication. It is the contiguous DP restricted to the prefixes of
// the topological order, so it solves the same model as `dp` over a smaller set of splits.
#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/exact.h"

namespace dplace::place {
namespace {

class PipeDreamPlacer : public Placer {
 public:
  std::string_view name() const override { return "pipedream"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    std::string note;
    const Deadline deadline = DeadlineAfter(req.limits.seconds);
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel model, BuildContiguousModel(p));
    const ContiguousSolution s = SolveLinear(model, deadline);
    if (!s.complete) {
      note = "not proven optimal over the linear order: time limit or memory budget reached";
    }
    if (s.found) return PlaceResult{ToPlacement(model, s, p.num_ops()), note};
    note = "no split of the linear order fits the devices";
    return PlaceResult{NoSplitFits(model, p.num_ops()), note};
  }
};

}  // namespace

std::unique_ptr<Placer> MakePipeDreamPlacer() { return std::make_unique<PipeDreamPlacer>(); }

}  // namespace dplace::place
