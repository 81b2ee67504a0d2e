#include "dplace/place/search/mcmc.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "dplace/base/rng.h"
#include "dplace/place/search/chains.h"
#include "dplace/place/search/score.h"
#include "dplace/place/search/start.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// Metropolis temperature, as a relative worsening accepted with probability 1/e: 1e-4 at the start,
// cooling geometrically to 1e-6. Moves that leave the step time unchanged are always accepted, so
// the chain walks the plateaus of ops off the critical path; a higher start temperature (2e-2 was
// the first choice) lets the chain drift away from the start and never come back in 2 s.
constexpr double kStartTemperature = 1e-4;
constexpr double kCooling = 0.01;
// Proposals are simulated incrementally against a base placement; any base gives exact answers,
// a closer one a shorter re-simulation. Most accepted moves leave the step time unchanged, and
// re-basing on each of them cost more than it saved (41,785 proposals in 2 s on inception_v3's
// training step on v100x8-nvlink, against 54,824 when re-basing every 16th acceptance).
constexpr int64_t kRebaseEvery = 16;
// Proposal mix: a whole name scope of the unit (when it has one), else a run of units that follow
// it on its device, else the unit alone; the target is the device of a neighbouring unit with
// probability kNeighbourTarget. Chosen on 36 of the models suite's workloads (2 s chains): against
// 15% / 30% / 50%, this mix gave step times 1.7% shorter in geometric mean (shorter on 15, longer
// on 8); sending the chain back to the best placement after 500 or 3,000 proposals without
// progress, and swapping u with a neighbour on the target device, changed nothing beyond the noise
// of 2 s runs (about 0.5% between two runs of one configuration).
constexpr double kScopeMove = 0.3, kRunMove = 0.3, kNeighbourTarget = 0.95;
// Share of proposals that move a unit on the critical path of the current placement (recomputed
// at each re-base): only those can shorten the step at once.
constexpr double kCriticalUnit = 0.5;

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
    // Without a limit of its own the chain stops after 200 proposals per unit (at most 20,000);
    // with a time limit it runs until the time is spent.
    const int64_t default_evaluations =
        ctx.budget.time_limit_s > 0
            ? 0
            : std::min<int64_t>(20000, 200 * static_cast<int64_t>(units.size()));

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
    ctx.evaluator->SetBase(current);  // proposals re-simulate from where they differ
    std::vector<size_t> critical;
    std::vector<char> is_critical(units.size());
    auto find_critical = [&] {
      for (size_t v : critical) is_critical[v] = 0;
      critical.clear();
      for (sim::OpId op : ctx.evaluator->CriticalPath(current)) {
        const auto v = static_cast<size_t>(unit_of_op[static_cast<size_t>(op)]);
        if (!is_critical[v]) critical.push_back(v);
        is_critical[v] = 1;
      }
    };
    find_critical();

    Rng rng(ctx.seed);
    ScopeGroups scopes = MakeScopeGroups(p, units);
    for (auto& chain : ChainGroups(p, units)) {
      // A cluster of most units (co-location can merge a training step's clusters into one) would
      // make its proposals moves of nearly everything.
      if (chain.size() < 2 || 2 * chain.size() > units.size()) continue;
      for (size_t v : chain) scopes.of_unit[v].push_back(static_cast<int>(scopes.members.size()));
      scopes.members.emplace_back(chain.begin(), chain.end());
    }
    std::vector<size_t> moved;
    std::vector<sim::DeviceId> targets;
    int64_t accepted = 0, proposed = 0, idle = 0;
    while (!units.empty() && !clock.Out(default_evaluations)) {
      const double temperature =
          kStartTemperature * std::pow(kCooling, clock.Spent(default_evaluations));
      // Propose: one unit, a run of units that follow one another on its device, or a whole name
      // scope it belongs to (a module, or every call of one: a layer of an unrolled RNN).
      moved.clear();
      const size_t u = !critical.empty() && rng.Uniform() < kCriticalUnit
                           ? critical[rng.Below(critical.size())]
                           : rng.Below(units.size());
      const sim::DeviceId from = unit_device[u];
      const auto& scopes_of_u = scopes.of_unit[u];
      const double kind = rng.Uniform();
      if (kind < kScopeMove && !scopes_of_u.empty()) {
        const auto& members =
            scopes.members[static_cast<size_t>(scopes_of_u[rng.Below(scopes_of_u.size())])];
        moved.assign(members.begin(), members.end());
      } else {
        moved.push_back(u);
      }
      if (kind >= kScopeMove && kind < kScopeMove + kRunMove) {
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
      // Target: mostly the device of a unit u exchanges tensors with, else any device. A unit whose
      // neighbours all share its device proposes nothing on the first branch: the draw starts over,
      // so the chain spends its evaluations on the boundaries between devices.
      targets.clear();
      if (rng.Uniform() < kNeighbourTarget) {
        for (sim::OpId op : units[u].ops) {
          for (auto neighbours : {p.g().Predecessors(op), p.g().Successors(op)}) {
            for (sim::OpId o : neighbours) {
              const sim::DeviceId d =
                  unit_device[static_cast<size_t>(unit_of_op[static_cast<size_t>(o)])];
              if (d != from && std::find(targets.begin(), targets.end(), d) == targets.end()) {
                targets.push_back(d);
              }
            }
          }
        }
      }
      if (targets.empty()) targets = units[u].devices;
      std::erase_if(targets, [&](sim::DeviceId d) {
        if (d == from) return true;
        for (size_t v : moved) {
          const auto& allowed = units[v].devices;
          if (std::find(allowed.begin(), allowed.end(), d) == allowed.end()) return true;
        }
        return false;
      });
      if (targets.empty()) {
        if (++idle > 100 * static_cast<int64_t>(units.size()) + 1000) break;  // nothing can move
        continue;
      }
      idle = 0;
      const sim::DeviceId to = targets[rng.Below(targets.size())];
      for (size_t v : moved) Assign(units[v], to, &current);
      // Metropolis: a relative worsening w is accepted with probability exp(-w / temperature),
      // that is when the step time is below current * (1 + temperature * -ln r) for a uniform r
      // drawn first, so the simulation can give up on a proposal once it is sure to exceed that.
      const double accept_below =
          current_score.feasible
              ? current_score.value * (1 + temperature * -std::log(std::max(rng.Uniform(), 1e-300)))
              : std::numeric_limits<double>::infinity();
      const Score s = ScoreOf(ctx.evaluator->EvaluateNear(current, accept_below));
      ++proposed;
      // An infeasible chain wanders until it is feasible.
      const bool accept =
          !current_score.feasible || s < current_score || (s.feasible && s.value < accept_below);
      if (accept) {
        ++accepted;
        for (size_t v : moved) unit_device[v] = to;
        current_score = s;
        if (accepted % kRebaseEvery == 0) {
          ctx.evaluator->SetBase(current);
          find_critical();
        }
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
