#include <limits>

#include "dplace/place/baseline/baseline.h"

namespace dplace::place {
namespace {

class SinglePlacer : public Placer {
 public:
  std::string_view name() const override { return "single"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    sim::Placement best;
    bool best_feasible = false;
    double best_value = std::numeric_limits<double>::infinity();
    for (sim::DeviceId d{0}; d < p.num_devices(); ++d) {
      sim::Placement candidate = AllOn(p, d);
      const sim::Evaluation e = req.evaluator->Evaluate(candidate);
      // Feasible beats infeasible; then the smaller value; ties keep the lower device id.
      if ((e.feasible && !best_feasible) || (e.feasible == best_feasible && e.value < best_value)) {
        best = std::move(candidate);
        best_feasible = e.feasible;
        best_value = e.value;
      }
    }
    return PlaceResult{.placement = std::move(best)};
  }

  // Every op on `d`, except ops `d` may not run: those go to their fastest allowed device. A
  // co-location group follows its first op, so groups stay whole.
  static sim::Placement AllOn(const sim::Problem& p, sim::DeviceId d) {
    sim::Placement placement(p.g().ops().size(), d);
    IdVector<graph::GroupId, sim::DeviceId> group_device(p.g().groups().size(), sim::DeviceId(-1));
    for (sim::OpId op{0}; op < p.num_ops(); ++op) {
      const graph::GroupId grp = p.g().op(op).colocation;
      sim::DeviceId target = d;
      bool group_ok = true;
      if (grp != graph::kNoGroup) {
        for (sim::OpId m : p.g().GroupMembers(grp)) group_ok = group_ok && p.Allowed(m, d);
      }
      if (!p.Allowed(op, d) || !group_ok) {
        if (grp != graph::kNoGroup && group_device[grp] >= 0) {
          target = group_device[grp];
        } else {
          double fastest = std::numeric_limits<double>::infinity();
          for (sim::DeviceId e{0}; e < p.num_devices(); ++e) {
            if (p.Allowed(op, e) && p.costs.OpTime(op, e) < fastest) {
              fastest = p.costs.OpTime(op, e);
              target = e;
            }
          }
        }
      }
      if (grp != graph::kNoGroup && group_device[grp] < 0) {
        group_device[grp] = target;
      }
      placement[op] = target;
    }
    return placement;
  }
};

}  // namespace

std::unique_ptr<Placer> MakeSinglePlacer() { return std::make_unique<SinglePlacer>(); }

}  // namespace dplace::place
