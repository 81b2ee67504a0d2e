#include "dplace/place/search/mcmc.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

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
// Chains run side by side, each on its own evaluator (and thread, where the machine has a second
// core), and meet every kEpoch proposals of each: a chain whose current placement is worse than
// the best any has found continues from that best. Their number does not depend on the machine, so
// a run that stops on evaluations gives the same placement everywhere. On 12 workloads of the
// models suite × 3 seeds (2 s runs, two cores), against one chain: step times 1.4% shorter in
// geometric mean (1.0% meeting every 250 proposals, 0.5% every 4,000, 0.4% never meeting).
constexpr int kChains = 2;
constexpr int64_t kEpoch = 1000;

// What every chain reads: the units, which unit each op is in, the groups that move together.
struct Moves {
  std::vector<Unit> units;
  std::vector<int> unit_of_op;
  ScopeGroups groups;
};

Moves MakeMoves(const sim::Problem& p) {
  Moves m{MakeUnits(p), std::vector<int>(static_cast<size_t>(p.num_ops())), {}};
  for (size_t u = 0; u < m.units.size(); ++u) {
    for (sim::OpId op : m.units[u].ops) m.unit_of_op[static_cast<size_t>(op)] = static_cast<int>(u);
  }
  m.groups = MakeScopeGroups(p, m.units);
  for (auto& chain : ChainGroups(p, m.units)) {
    // A cluster of most units (co-location can merge a training step's clusters into one) would
    // make its proposals moves of nearly everything.
    if (chain.size() < 2 || 2 * chain.size() > m.units.size()) continue;
    for (size_t v : chain) m.groups.of_unit[v].push_back(static_cast<int>(m.groups.members.size()));
    m.groups.members.emplace_back(chain.begin(), chain.end());
  }
  return m;
}

// One Metropolis chain over the units' devices.
class Chain {
 public:
  Chain(const sim::Problem& p, const Moves& moves, sim::Evaluator* evaluator, uint64_t seed)
      : p_(p), m_(moves), evaluator_(evaluator), rng_(seed), is_critical_(moves.units.size()) {}

  // Continues from `placement`, whose score is `score`.
  void Restart(const sim::Placement& placement, const Score& score) {
    current_ = placement;
    current_score_ = score;
    unit_device_.resize(m_.units.size());
    for (size_t u = 0; u < m_.units.size(); ++u)
      unit_device_[u] = current_[static_cast<size_t>(m_.units[u].ops[0])];
    if (best_.empty() || score < best_score_) best_ = placement, best_score_ = score;
    evaluator_->SetBase(current_);  // proposals re-simulate from where they differ
    FindCritical();
  }

  // Up to `proposals` proposals at the temperature `temperature(evaluations of this chain)`, until
  // `out(evaluations)` says the budget is spent or no unit can move.
  template <typename Temperature, typename Out>
  void Run(int64_t proposals, const Temperature& temperature, const Out& out) {
    for (int64_t i = 0; i < proposals && !stuck_; ++i) {
      const int64_t evaluations = evaluator_->evaluations();
      if (out(evaluations)) return;
      Propose(temperature(evaluations));
    }
  }

  int64_t evaluations() const { return evaluator_->evaluations(); }
  const sim::Placement& best() const { return best_; }
  const Score& best_score() const { return best_score_; }
  int64_t proposed() const { return proposed_; }
  int64_t accepted() const { return accepted_; }
  const Score& current_score() const { return current_score_; }
  bool stuck() const { return stuck_; }

 private:
  void FindCritical() {
    for (size_t v : critical_) is_critical_[v] = 0;
    critical_.clear();
    for (sim::OpId op : evaluator_->CriticalPath(current_)) {
      const auto v = static_cast<size_t>(m_.unit_of_op[static_cast<size_t>(op)]);
      if (!is_critical_[v]) critical_.push_back(v);
      is_critical_[v] = 1;
    }
  }

  sim::DeviceId DeviceOfOp(sim::OpId op) const {
    return unit_device_[static_cast<size_t>(m_.unit_of_op[static_cast<size_t>(op)])];
  }

  // Propose: one unit, a run of units that follow one another on its device, or a whole name
  // scope it belongs to (a module, or every call of one: a layer of an unrolled RNN).
  void Propose(double temperature) {
    const std::vector<Unit>& units = m_.units;
    moved_.clear();
    const size_t u = !critical_.empty() && rng_.Uniform() < kCriticalUnit
                         ? critical_[rng_.Below(critical_.size())]
                         : rng_.Below(units.size());
    const sim::DeviceId from = unit_device_[u];
    const auto& groups_of_u = m_.groups.of_unit[u];
    const double kind = rng_.Uniform();
    if (kind < kScopeMove && !groups_of_u.empty()) {
      const auto& members =
          m_.groups.members[static_cast<size_t>(groups_of_u[rng_.Below(groups_of_u.size())])];
      moved_.assign(members.begin(), members.end());
    } else {
      moved_.push_back(u);
    }
    if (kind >= kScopeMove && kind < kScopeMove + kRunMove) {
      const size_t length = 2 + rng_.Below(7);
      while (moved_.size() < length) {
        const size_t last = moved_.back();
        size_t next = units.size();
        for (sim::OpId s : p_.g().Successors(units[last].ops.back())) {
          const auto v = static_cast<size_t>(m_.unit_of_op[static_cast<size_t>(s)]);
          if (v != last && unit_device_[v] == from &&
              std::find(moved_.begin(), moved_.end(), v) == moved_.end()) {
            next = v;
            break;
          }
        }
        if (next == units.size()) break;
        moved_.push_back(next);
      }
    }
    // Target: mostly the device of a unit u exchanges tensors with, else any device. A unit whose
    // neighbours all share its device proposes nothing on the first branch: the draw starts over,
    // so the chain spends its evaluations on the boundaries between devices.
    targets_.clear();
    if (rng_.Uniform() < kNeighbourTarget) {
      for (sim::OpId op : units[u].ops) {
        for (auto neighbours : {p_.g().Predecessors(op), p_.g().Successors(op)}) {
          for (sim::OpId o : neighbours) {
            const sim::DeviceId d = DeviceOfOp(o);
            if (d != from && std::find(targets_.begin(), targets_.end(), d) == targets_.end()) {
              targets_.push_back(d);
            }
          }
        }
      }
    }
    if (targets_.empty()) targets_ = units[u].devices;
    std::erase_if(targets_, [&](sim::DeviceId d) {
      if (d == from) return true;
      for (size_t v : moved_) {
        const auto& allowed = units[v].devices;
        if (std::find(allowed.begin(), allowed.end(), d) == allowed.end()) return true;
      }
      return false;
    });
    if (targets_.empty()) {
      stuck_ = ++idle_ > 100 * static_cast<int64_t>(units.size()) + 1000;  // nothing can move
      return;
    }
    idle_ = 0;
    const sim::DeviceId to = targets_[rng_.Below(targets_.size())];
    for (size_t v : moved_) Assign(units[v], to, &current_);
    // Metropolis: a relative worsening w is accepted with probability exp(-w / temperature),
    // that is when the step time is below current * (1 + temperature * -ln r) for a uniform r
    // drawn first, so the simulation can give up on a proposal once it is sure to exceed that.
    const double accept_below =
        current_score_.feasible
            ? current_score_.value * (1 + temperature * -std::log(std::max(rng_.Uniform(), 1e-300)))
            : std::numeric_limits<double>::infinity();
    const Score s = ScoreOf(evaluator_->EvaluateNear(current_, accept_below));
    ++proposed_;
    // An infeasible chain wanders until it is feasible.
    const bool accept =
        !current_score_.feasible || s < current_score_ || (s.feasible && s.value < accept_below);
    if (!accept) {
      for (size_t v : moved_) Assign(units[v], unit_device_[v], &current_);
      return;
    }
    ++accepted_;
    for (size_t v : moved_) unit_device_[v] = to;
    current_score_ = s;
    if (accepted_ % kRebaseEvery == 0) {
      evaluator_->SetBase(current_);
      FindCritical();
    }
    if (s < best_score_) {
      best_score_ = s;
      best_ = current_;
    }
  }

  const sim::Problem& p_;
  const Moves& m_;
  sim::Evaluator* evaluator_;
  Rng rng_;
  sim::Placement current_, best_;
  Score current_score_, best_score_;
  std::vector<sim::DeviceId> unit_device_;
  std::vector<size_t> critical_, moved_;
  std::vector<char> is_critical_;
  std::vector<sim::DeviceId> targets_;
  int64_t proposed_ = 0, accepted_ = 0, idle_ = 0;
  bool stuck_ = false;
};

// The chain with the best placement (the first of equals).
size_t Leader(const std::vector<Chain>& chains) {
  size_t leader = 0;
  for (size_t i = 1; i < chains.size(); ++i) {
    if (chains[i].best_score() < chains[leader].best_score()) leader = i;
  }
  return leader;
}

class McmcPlacer : public Placer {
 public:
  std::string_view name() const override { return "mcmc"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const BudgetClock clock(ctx);
    const Moves moves = MakeMoves(p);
    Start start = BestHeuristic(p, ctx);
    if (moves.units.empty()) return std::move(start.placement);

    // Without a limit of its own the search stops after 200 proposals per unit (at most 20,000);
    // with a time limit it runs until the time is spent. The chains share the evaluations.
    const bool by_evaluations = ctx.budget.max_evaluations > 0 || ctx.budget.time_limit_s <= 0;
    const int64_t budget =
        ctx.budget.max_evaluations > 0
            ? ctx.budget.max_evaluations - clock.Evaluations()
            : std::min<int64_t>(20000, 200 * static_cast<int64_t>(moves.units.size()));
    const int64_t share = std::max<int64_t>(0, budget) / kChains;
    std::vector<std::unique_ptr<sim::Evaluator>> forks;
    std::vector<Chain> chains;
    chains.reserve(kChains);
    for (int i = 0; i < kChains; ++i) {
      sim::Evaluator* evaluator =
          i == 0 ? ctx.evaluator : forks.emplace_back(ctx.evaluator->Fork()).get();
      chains.emplace_back(p, moves, evaluator,
                          ctx.seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(i));
      chains.back().Restart(start.placement, start.score);
    }
    std::vector<int64_t> first(kChains);
    for (int i = 0; i < kChains; ++i)
      first[static_cast<size_t>(i)] = chains[static_cast<size_t>(i)].evaluations();
    // A chain's fraction of the budget spent after `evaluations` of its evaluator's, by whichever
    // limit is closer.
    auto spent = [&](int i, int64_t evaluations) {
      double s = ctx.budget.time_limit_s > 0 ? clock.Elapsed() / ctx.budget.time_limit_s : 0;
      if (by_evaluations) {
        s = share == 0
                ? 1
                : std::max(s, static_cast<double>(evaluations - first[static_cast<size_t>(i)]) /
                                  static_cast<double>(share));
      }
      return s;
    };
    auto run = [&](int i) {
      chains[static_cast<size_t>(i)].Run(
          kEpoch,
          [&](int64_t n) {
            return kStartTemperature * std::pow(kCooling, std::min(1.0, spent(i, n)));
          },
          [&](int64_t n) { return spent(i, n) >= 1; });
    };
    const bool threads = std::thread::hardware_concurrency() > 1;
    // A chain at the lower bound has found an optimum: nothing is left to search for.
    while (!AtLowerBound(p, chains[Leader(chains)].best_score())) {
      bool done = true;
      for (int i = 0; i < kChains; ++i) {
        const Chain& c = chains[static_cast<size_t>(i)];
        done &= c.stuck() || spent(i, c.evaluations()) >= 1;
      }
      if (done) break;
      if (threads) {
        std::vector<std::thread> helpers;
        for (int i = 1; i < kChains; ++i) helpers.emplace_back(run, i);
        run(0);
        for (std::thread& t : helpers) t.join();
      } else {
        for (int i = 0; i < kChains; ++i) run(i);
      }
      // The chains meet: one whose current placement is worse than the best either has found
      // continues from that best.
      const size_t leader = Leader(chains);
      for (size_t i = 0; i < chains.size(); ++i) {
        if (i != leader && chains[leader].best_score() < chains[i].current_score()) {
          chains[i].Restart(chains[leader].best(), chains[leader].best_score());
        }
      }
    }
    int64_t proposed = 0, accepted = 0;
    for (const Chain& c : chains) {
      proposed += c.proposed();
      accepted += c.accepted();
    }
    for (const auto& fork : forks) ctx.evaluator->CountEvaluations(fork->evaluations());
    const Chain& leader = chains[Leader(chains)];
    ctx.note = "from " + start.placer + "; " + std::to_string(kChains) + " chains, " +
               std::to_string(proposed) + " proposals, " + std::to_string(accepted) + " accepted" +
               (AtLowerBound(p, leader.best_score()) ? "; at the lower bound" : "");
    return leader.best();
  }
};

}  // namespace

std::unique_ptr<Placer> MakeMcmcPlacer() { return std::make_unique<McmcPlacer>(); }

}  // namespace dplace::place
