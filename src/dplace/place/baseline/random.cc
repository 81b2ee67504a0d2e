#include <algorithm>

#include "dplace/base/rng.h"
#include "dplace/place/baseline/baseline.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

class RandomPlacer : public Placer {
 public:
  std::string_view name() const override { return "random"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    Rng rng(req.seed);
    sim::Placement placement(p.g().ops().size(), sim::DeviceId(0));
    sim::PerDevice<double> used(p.c().devices().size(), 0);
    for (const Unit& unit : MakeUnits(p)) {
      // A random rotation of the allowed devices; first fit from there.
      std::vector<sim::DeviceId> order = unit.devices;
      if (!order.empty()) {
        std::rotate(order.begin(), order.begin() + static_cast<long>(rng.Below(order.size())),
                    order.end());
      }
      Assign(unit, FirstFit(p, unit, order, &used), &placement);
    }
    return PlaceResult{.placement = std::move(placement)};
  }
};

}  // namespace

std::unique_ptr<Placer> MakeRandomPlacer() { return std::make_unique<RandomPlacer>(); }

}  // namespace dplace::place
