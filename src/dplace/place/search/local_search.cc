#include "dplace/place/search/local_search.h"

#include <algorithm>
#include <numeric>

#include "dplace/base/rng.h"
#include "dplace/place/search/score.h"
#include "dplace/place/search/start.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

class LocalSearchPlacer : public Placer {
 public:
  explicit LocalSearchPlacer(LocalSearchOptions options) : options_(options) {}
  std::string_view name() const override { return "local_search"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const BudgetClock clock(ctx);
    auto out_of_budget = [&] { return clock.Out(); };
    // Moves must beat `than`: the simulation may give up on one once it is sure not to.
    auto score = [&](const sim::Placement& placement, const Score& than) {
      return ScoreOf(ctx.evaluator->EvaluateNear(placement, ToBeat(than)));
    };
    Rng rng(ctx.seed);
    const std::vector<Unit> units = MakeUnits(p);
    sim::Placement best_placement;
    Score best;
    for (int restart = 0; restart < options_.restarts && !out_of_budget() && !AtLowerBound(p, best);
         ++restart) {
      sim::Placement placement(static_cast<size_t>(p.num_ops()), 0);
      std::vector<sim::DeviceId> unit_device(units.size(), 0);
      for (size_t u = 0; u < units.size(); ++u) {
        const auto& allowed = units[u].devices;
        unit_device[u] = allowed.empty() ? 0 : allowed[rng.Below(allowed.size())];
      }
      if (restart == 0 && ctx.given_plan != nullptr && ctx.start == nullptr &&
          ctx.given_plan->size() == static_cast<size_t>(p.num_ops())) {
        for (size_t u = 0; u < units.size(); ++u) {
          unit_device[u] = (*ctx.given_plan)[static_cast<size_t>(units[u].ops.front())];
        }
      } else if (restart == 0) {
        const Start start = BestHeuristic(p, ctx);
        for (size_t u = 0; u < units.size() && !start.placement.empty(); ++u) {
          unit_device[u] = start.placement[static_cast<size_t>(units[u].ops.front())];
        }
      }
      for (size_t u = 0; u < units.size(); ++u) Assign(units[u], unit_device[u], &placement);
      ctx.evaluator->SetBase(placement);  // moves re-simulate from where they differ
      Score current = ScoreOf(ctx.evaluator->EvaluateNear(placement));
      bool improved = true;
      while (improved && !out_of_budget() && !AtLowerBound(p, current)) {
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
            const Score s = score(placement, best_move);
            if (s < best_move) {
              best_move = s;
              best_to = to;
            }
          }
          Assign(units[u], best_to, &placement);
          if (best_to != from) {
            ctx.evaluator->SetBase(placement);
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
