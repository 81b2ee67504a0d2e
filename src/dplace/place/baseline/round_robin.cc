#include "dplace/place/baseline/baseline.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

class RoundRobinPlacer : public Placer {
 public:
  std::string_view name() const override { return "round_robin"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest&) override {
    sim::Placement placement(p.g().ops().size(), sim::DeviceId(0));
    sim::PerDevice<double> used(p.c().devices().size(), 0);
    size_t turn = 0;
    for (const Unit& unit : MakeUnits(p)) {
      // The unit's allowed devices, starting from the one whose turn it is.
      std::vector<sim::DeviceId> order;
      for (size_t k = 0; k < unit.devices.size(); ++k) {
        const sim::DeviceId d = unit.devices[(turn + k) % unit.devices.size()];
        order.push_back(d);
      }
      const sim::DeviceId d = FirstFit(p, unit, order, &used);
      Assign(unit, d, &placement);
      turn = d.index() + 1;
    }
    return PlaceResult{.placement = std::move(placement)};
  }
};

}  // namespace

std::unique_ptr<Placer> MakeRoundRobinPlacer() { return std::make_unique<RoundRobinPlacer>(); }

}  // namespace dplace::place
