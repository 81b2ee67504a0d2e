#include "dplace/place/search/local_search.h"

#include <algorithm>
#include <numeric>

#include "dplace/base/rng.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// The first restart starts from the best placement of everything on one device (where every unit
// may run there), so that the search is never worse than that baseline; the others are random.
template <typename ScoreFn>
void SingleDeviceStart(const sim::Problem& p, const std::vector<Unit>& units, ScoreFn& score,
                       std::vector<sim::DeviceId>* unit_device) {
  Score best;
  for (sim::DeviceId d = 0; d < p.num_devices(); ++d) {
    bool everywhere = true;
    for (const Unit& u : units) {
      everywhere =
          everywhere && std::find(u.devices.begin(), u.devices.end(), d) != u.devices.end();
    }
    if (!everywhere) continue;
    sim::Placement placement(static_cast<size_t>(p.num_ops()), d);
    const Score s = score(placement);
    if (s < best) {
      best = s;
      unit_device->assign(units.size(), d);
    }
  }
}

class LocalSearchPlacer : public Placer {
 public:
  explicit LocalSearchPlacer(LocalSearchOptions options) : options_(options) {}
  std::string_view name() const override { return "local_search"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const BudgetClock clock(ctx);
    auto out_of_budget = [&] { return clock.Out(); };
    auto score = [&](const sim::Placement& placement) {
      return ScoreOf(ctx.evaluator->Evaluate(placement));
    };
    Rng rng(ctx.seed);
    const std::vector<Unit> units = MakeUnits(p);
    sim::Placement best_placement;
    Score best;
    for (int restart = 0; restart < options_.restarts && !out_of_budget(); ++restart) {
      sim::Placement placement(static_cast<size_t>(p.num_ops()), 0);
      std::vector<sim::DeviceId> unit_device(units.size(), 0);
      for (size_t u = 0; u < units.size(); ++u) {
        const auto& allowed = units[u].devices;
        unit_device[u] = allowed.empty() ? 0 : allowed[rng.Below(allowed.size())];
      }
      if (restart == 0) SingleDeviceStart(p, units, score, &unit_device);
      for (size_t u = 0; u < units.size(); ++u) Assign(units[u], unit_device[u], &placement);
      Score current = score(placement);
      bool improved = true;
      while (improved && !out_of_budget()) {
        improved = false;
        std::vector<size_t> order(units.size());
        std::iota(order.begin(), order.end(), 0);
        for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
        for (size_t u : order) {
          if (out_of_budget()) break;
          const sim::DeviceId from = unit_device[u];
          sim::DeviceId best_to = from;
          Score best_move = current;
          for (sim::DeviceId to : units[u].devices) {
            if (to == from) continue;
            Assign(units[u], to, &placement);
            const Score s = score(placement);
            if (s < best_move) {
              best_move = s;
              best_to = to;
            }
          }
          Assign(units[u], best_to, &placement);
          if (best_to != from) {
            unit_device[u] = best_to;
            current = best_move;
            improved = true;
          }
        }
      }
      if (best_placement.empty() || current < best) {
        best = current;
        best_placement = placement;
      }
    }
    if (best_placement.empty()) {  // no time for even one restart: a valid start all the same
      best_placement.assign(static_cast<size_t>(p.num_ops()), 0);
      for (const Unit& u : units) Assign(u, u.devices.empty() ? 0 : u.devices[0], &best_placement);
    }
    return best_placement;
  }

  LocalSearchOptions options_;
};

}  // namespace

std::unique_ptr<Placer> MakeLocalSearchPlacer(LocalSearchOptions options) {
  return std::make_unique<LocalSearchPlacer>(options);
}

}  // namespace dplace::place
