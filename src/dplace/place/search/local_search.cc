#include "dplace/place/search/local_search.h"

#include <algorithm>
#include <numeric>

#include "dplace/base/rng.h"
#include "dplace/place/budget.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

class LocalSearchPlacer : public Placer {
 public:
  LocalSearchPlacer(LocalSearchOptions options, std::shared_ptr<StartFinder> start)
      : options_(options), start_(std::move(start)) {}
  std::string_view name() const override { return "local_search"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const Budget budget(req.limits, *req.evaluator);
    auto out_of_budget = [&] { return budget.Out(); };
    sim::Evaluator& evaluator = *req.evaluator;
    // Moves must beat `than`: the simulation may give up on one once it is sure not to.
    auto score = [&](const sim::Placement& placement, const Score& than) {
      return ScoreOf(evaluator.EvaluateNear(placement, ToBeat(than)));
    };
    Rng rng(req.seed);
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
      if (restart == 0 && (StartOf(p, req) != nullptr || start_ != nullptr)) {
        const Start start =
            start_ != nullptr ? start_->Find(p, req) : Start{.placement = *StartOf(p, req)};
        for (size_t u = 0; u < units.size() && !start.placement.empty(); ++u) {
          unit_device[u] = start.placement[static_cast<size_t>(units[u].ops.front())];
        }
      }
      for (size_t u = 0; u < units.size(); ++u) Assign(units[u], unit_device[u], &placement);
      evaluator.SetBase(placement);  // moves re-simulate from where they differ
      Score current = ScoreOf(evaluator.EvaluateNear(placement));
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
            evaluator.SetBase(placement);
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
    return PlaceResult{.placement = std::move(best_placement)};
  }

  LocalSearchOptions options_;
  std::shared_ptr<StartFinder> start_;
};

}  // namespace

void ReadOptions(OptionReader& r, LocalSearchOptions* o) {
  r.Read("restarts", &o->restarts, 1, 1 << 20,
         "restarts (the first from the start, the others at random)");
}

std::unique_ptr<Placer> MakeLocalSearchPlacer(LocalSearchOptions options,
                                              std::shared_ptr<StartFinder> start) {
  return std::make_unique<LocalSearchPlacer>(options, std::move(start));
}

}  // namespace dplace::place
