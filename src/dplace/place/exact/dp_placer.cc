// `dp`: optimal contiguous max-load (Tarnawski et al., NeurIPS 2020), see contiguous_dp.h. A first
// pass over the prefixes of one topological order (PipeDream's linear DP, milliseconds) gives an
// upper bound; the exact pass over all ideals then only looks at sets that could beat it.
#include <algorithm>
#include <limits>
#include <string>

#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/contiguous_model.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/exact/ideal_lattice.h"

namespace dplace::place {
namespace {

constexpr int64_t kMaxIdeals = 2'000'000;  // for time; MaxIdealsInMemory bounds memory

class DpPlacer : public Placer {
 public:
  std::string_view name() const override { return "dp"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    std::string note;
    const Deadline deadline = DeadlineAfter(req.limits.seconds);
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel model, BuildContiguousModel(p));
    const ContiguousSolution linear = SolveLinear(model, deadline);
    if (!linear.complete && !linear.found) {
      note =
          "time limit reached before any split over one topological order was found: "
          "everything on one device";
      return PlaceResult{NoSplitFits(model, p.num_ops()), note};
    }
    ContiguousSolution best = linear;
    auto lattice =
        IdealLattice::All(model.preds, std::min(kMaxIdeals, MaxIdealsInMemory(model)), deadline);
    if (!lattice.ok()) {
      note = "not proven optimal: " + lattice.status().message() +
             "; best split over one topological order";
    } else {
      const double bound = linear.found ? linear.max_load : std::numeric_limits<double>::infinity();
      const ContiguousSolution exact = SolveContiguous(model, *lattice, bound, deadline);
      if (exact.found) best = exact;
      note = exact.complete
                 ? "optimal contiguous split (" + std::to_string(lattice->size()) + " ideals)"
                 : "not proven optimal: time limit reached";
    }
    if (best.found) return PlaceResult{ToPlacement(model, best, p.num_ops()), note};
    note = "no contiguous split fits the devices";
    return PlaceResult{NoSplitFits(model, p.num_ops()), note};
  }
};

}  // namespace

std::unique_ptr<Placer> MakeDpPlacer() { return std::make_unique<DpPlacer>(); }

}  // namespace dplace::place
