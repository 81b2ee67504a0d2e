#include "dplace/place/search/mcmc.h"

#include <algorithm>
#include <cmath>

#include "dplace/base/rng.h"
#include "dplace/place/search/score.h"
#include "dplace/place/search/start.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

class McmcPlacer : public Placer {
 public:
  std::string_view name() const override { return "mcmc"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const BudgetClock clock(ctx);
    const std::vector<Unit> units = MakeUnits(p);
    std::vector<int> unit_of_op(static_cast<size_t>(p.num_ops()));
    for (size_t u = 0; u < units.size(); ++u) {
      for (sim::OpId op : units[u].ops) unit_of_op[static_cast<size_t>(op)] = static_cast<int>(u);
    }
    const int64_t default_evaluations =
        std::min<int64_t>(20000, 200 * static_cast<int64_t>(units.size()));

    // Start from the best heuristic.
    Start start = BestHeuristic(p, ctx);
    sim::Placement current = std::move(start.placement);
    Score current_score = start.score;
    const std::string start_name = start.placer;
    std::vector<sim::DeviceId> unit_device(units.size());
    for (size_t u = 0; u < units.size(); ++u)
      unit_device[u] = current[static_cast<size_t>(units[u].ops[0])];
    sim::Placement best = current;
    Score best_score = current_score;

    Rng rng(ctx.seed);
    std::vector<size_t> moved;
    int64_t accepted = 0, proposed = 0, idle = 0;
    while (!units.empty() && !clock.Out(default_evaluations)) {
      const double temperature = 0.02 * std::pow(0.025, clock.Spent(default_evaluations));
      // Propose: one unit, or a run of units that follow one another on its device.
      moved.clear();
      size_t u = rng.Below(units.size());
      const sim::DeviceId from = unit_device[u];
      moved.push_back(u);
      if (rng.Uniform() < 0.3) {
        const size_t length = 2 + rng.Below(7);
        while (moved.size() < length) {
          const size_t last = moved.back();
          size_t next = units.size();
          for (sim::OpId s : p.g().Successors(units[last].ops.back())) {
            const auto v = static_cast<size_t>(unit_of_op[static_cast<size_t>(s)]);
            if (v != last && unit_device[v] == from &&
                std::find(moved.begin(), moved.end(), v) == moved.end()) {
              next = v;
              break;
            }
          }
          if (next == units.size()) break;
          moved.push_back(next);
        }
      }
      std::vector<sim::DeviceId> targets;
      for (sim::DeviceId d : units[u].devices) {
        bool all = d != from;
        for (size_t v : moved) {
          all = all && std::find(units[v].devices.begin(), units[v].devices.end(), d) !=
                           units[v].devices.end();
        }
        if (all) targets.push_back(d);
      }
      if (targets.empty()) {
        if (++idle > 100 * static_cast<int64_t>(units.size()) + 1000) break;  // nothing can move
        continue;
      }
      idle = 0;
      const sim::DeviceId to = targets[rng.Below(targets.size())];
      for (size_t v : moved) Assign(units[v], to, &current);
      const Score s = ScoreOf(ctx.evaluator->Evaluate(current));
      ++proposed;
      bool accept = s < current_score;
      if (!accept && s.feasible == current_score.feasible && std::isfinite(s.value)) {
        const double worse = (s.value - current_score.value) / std::max(current_score.value, 1e-30);
        accept = rng.Uniform() < std::exp(-worse / temperature);
      } else if (!accept && !current_score.feasible) {
        accept = true;  // wander until feasible
      }
      if (accept) {
        ++accepted;
        for (size_t v : moved) unit_device[v] = to;
        current_score = s;
        if (s < best_score) {
          best_score = s;
          best = current;
        }
      } else {
        for (size_t v : moved) Assign(units[v], unit_device[v], &current);
      }
    }
    ctx.note = "from " + start_name + "; " + std::to_string(proposed) + " proposals, " +
               std::to_string(accepted) + " accepted";
    return best;
  }
};

}  // namespace

std::unique_ptr<Placer> MakeMcmcPlacer() { return std::make_unique<McmcPlacer>(); }

}  // namespace dplace::place
