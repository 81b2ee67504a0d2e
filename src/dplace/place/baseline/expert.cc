#include <algorithm>
#include <numeric>

#include "dplace/place/baseline/baseline.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// The human-expert rule of the RL papers, for when no plan is given: the co-location units in
// topological order (layer by layer) cut into contiguous runs, one per accelerator (every device
// not of kind "cpu"; all devices when there are none), each run's compute time proportional to
// its device's speed; a run also ends when its device's memory is full. Units no accelerator may
// run go to their fastest allowed device (the host CPU).
sim::Placement ExpertRule(const sim::Problem& p) {
  const Units units = MakeUnits(p);
  std::vector<sim::DeviceId> accelerators;
  for (sim::DeviceId d{0}; d < p.num_devices(); ++d) {
    if (p.c().device(d).kind != "cpu") accelerators.push_back(d);
  }
  if (accelerators.empty()) {
    for (sim::DeviceId d : p.c().device_ids()) accelerators.push_back(d);
  }
  const auto unit_time = [&](const Unit& u, sim::DeviceId d) {
    double t = 0;
    for (sim::OpId op : u.ops) t += p.costs.OpTime(op, d);
    return t;
  };
  std::vector<double> speed;
  double total_speed = 0, total = 0;
  for (sim::DeviceId d : accelerators) {
    double all = 0;
    for (const Unit& u : units) all += unit_time(u, d);
    speed.push_back(all > 0 ? 1 / all : 1);
    total_speed += speed.back();
  }
  const auto on_accelerator = [&](const Unit& u) {
    return std::any_of(accelerators.begin(), accelerators.end(), [&](sim::DeviceId d) {
      return std::find(u.devices.begin(), u.devices.end(), d) != u.devices.end();
    });
  };
  for (const Unit& u : units) {
    if (on_accelerator(u)) total += unit_time(u, accelerators.front()) * speed.front();
  }
  // `total` is now in "fractions of the first accelerator's whole graph", comparable across
  // devices.
  sim::Placement placement(p.g().ops().size(), sim::DeviceId(0));
  sim::PerDevice<double> used(p.c().devices().size(), 0);
  size_t current = 0;
  double done = 0, target = total * speed[0] / total_speed;
  for (const Unit& u : units) {
    if (!on_accelerator(u)) {
      Assign(u, FirstFit(p, u, FastestFirst(p, u), &used), &placement);
      continue;
    }
    sim::DeviceId d = accelerators[current];
    const bool full = used[d] + u.footprint_bytes > p.c().device(d).memory_bytes;
    if ((done >= target || full) && current + 1 < accelerators.size() && used[d] > 0) {
      ++current;
      d = accelerators[current];
      target += total * speed[current] / total_speed;
    }
    if (std::find(u.devices.begin(), u.devices.end(), d) == u.devices.end() ||
        used[d] + u.footprint_bytes > p.c().device(d).memory_bytes) {
      d = FirstFit(p, u, FastestFirst(p, u), &used);  // every accelerator full: the host
    } else {
      used[d] += u.footprint_bytes;
    }
    done += unit_time(u, accelerators.front()) * speed.front();
    Assign(u, d, &placement);
  }
  return placement;
}

class ExpertPlacer : public Placer {
 public:
  std::string_view name() const override { return "expert"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    if (req.start == nullptr) {
      return PlaceResult{
          .placement = ExpertRule(p),
          .note = "expert rule: contiguous layer-wise split balanced by compute time"};
    }
    if (StartOf(p, req) == nullptr) {
      return InvalidInput("the plan does not cover the graph's " + std::to_string(p.num_ops()) +
                          " ops");
    }
    return PlaceResult{.placement = *req.start, .note = "the given plan"};
  }
};

}  // namespace

std::unique_ptr<Placer> MakeExpertPlacer() { return std::make_unique<ExpertPlacer>(); }

}  // namespace dplace::place
