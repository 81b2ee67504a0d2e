// `dp`: optimal contiguous max-load (Tarnawski et al., NeurIPS 2020), see contiguous_dp.h. A first
// pass over the prefixes of one topological order (PipeDream's linear DP, milliseconds) gives an
// upper bound; the exact pass over all ideals then only looks at sets that could beat it.
#include <limits>

#include "dplace/place/exact/contiguous_dp.h"
#include "dplace/place/exact/contiguous_model.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/exact/ideal_lattice.h"

namespace dplace::place {
namespace {

constexpr int64_t kMaxIdeals = 5'000'000;

class DpPlacer : public Placer {
 public:
  std::string_view name() const override { return "dp"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext&) override {
    DPLACE_ASSIGN_OR_RETURN(ContiguousModel model, BuildContiguousModel(p));
    const ContiguousSolution linear = SolveContiguous(model, IdealLattice::Chain(model.num_units),
                                                      std::numeric_limits<double>::infinity());
    DPLACE_ASSIGN_OR_RETURN(IdealLattice lattice, IdealLattice::All(model.preds, kMaxIdeals));
    const double bound = linear.found ? linear.max_load : std::numeric_limits<double>::infinity();
    const ContiguousSolution exact = SolveContiguous(model, lattice, bound);
    if (exact.found) return ToPlacement(model, exact, p.num_ops());
    if (linear.found) return ToPlacement(model, linear, p.num_ops());
    // No contiguous split fits: hand back everything on the first accelerator (or CPU), which the
    // evaluation reports as infeasible with its reason.
    const sim::DeviceId d = model.accelerators.empty() ? model.cpus[0] : model.accelerators[0];
    return sim::Placement(static_cast<size_t>(p.num_ops()), d);
  }
};

}  // namespace

std::unique_ptr<Placer> MakeDpPlacer() { return std::make_unique<DpPlacer>(); }

}  // namespace dplace::place
