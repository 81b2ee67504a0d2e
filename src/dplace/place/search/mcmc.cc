#include "dplace/place/search/mcmc.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>

#include "dplace/base/rng.h"
#include "dplace/place/budget.h"
#include "dplace/place/search/bandit.h"
#include "dplace/place/search/chains.h"
#include "dplace/place/search/learned_proposal.h"
#include "dplace/place/search/move_scorer.h"
#include "dplace/place/search/moves.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"

namespace dplace::place {
namespace {

// What every chain reads: the units, which unit each op is in, the groups that move together.
struct Moves {
  Units units;
  IdVector<sim::OpId, UnitId> unit_of_op;
  ScopeGroups groups;
};

Moves MakeMoves(const sim::Problem& p) {
  Moves m{MakeUnits(p), IdVector<sim::OpId, UnitId>(p.g().ops().size()), {}};
  for (UnitId u : m.units.ids()) {
    for (sim::OpId op : m.units[u].ops) m.unit_of_op[op] = u;
  }
  m.groups = MakeScopeGroups(p, m.units);
  for (auto& chain : ChainGroups(p, m.units)) {
    // A cluster of most units (co-location can merge a training step's clusters into one) would
    // make its proposals moves of nearly everything.
    if (chain.size() < 2 || 2 * chain.size() > m.units.size()) continue;
    for (UnitId v : chain) m.groups.of_unit[v].push_back(m.groups.members.next_id());
    m.groups.members.push_back(std::move(chain));
  }
  return m;
}

// Metropolis proposals: one unit, a run of units that follow one another on its device, or a
// whole name scope or linear cluster it belongs to, to the device of a neighbouring unit (or any).
// A unit whose neighbours all share its device proposes nothing on the first branch: the draw
// starts over, so the chain spends its evaluations on the boundaries between devices.
class McmcProposer {
 public:
  // `stop`: when the search's time is spent (a learned refresh begun then is cut).
  McmcProposer(const sim::Problem& p, const Moves& moves, const McmcOptions& options, Rng& rng,
               LearnedProposal* learned, std::function<bool()> stop, const MoveScorer* pretrained)
      : p_(p), m_(moves), o_(options), rng_(rng), is_critical_(moves.units.size()) {
    if (o_.control == "bandit") {
      const double single = std::max(0.0, 1 - o_.scope_move - o_.run_move);
      std::vector<double> prior;
      for (double source : {o_.critical_unit, 1 - o_.critical_unit}) {
        for (double kind : {o_.scope_move, o_.run_move, single}) prior.push_back(source * kind);
      }
      std::vector<double> heat(kHeat.size(), 1.0);
      if (!o_.control_prior.empty()) {
        prior.assign(o_.control_prior.begin(), o_.control_prior.begin() + 6);
        heat.assign(o_.control_prior.begin() + 6, o_.control_prior.end());
      }
      bandit_.emplace(std::move(prior), o_.control_floor, o_.control_rate);
      heat_.emplace(std::move(heat), o_.control_floor, o_.control_rate);
    }
    if (o_.guide != "none") {
      context_.emplace(p, moves.units, moves.unit_of_op);
      scorer_.emplace(*pretrained);
    }
    if (learned != nullptr) {
      learned_.emplace(moves.units, learned, o_.proposal_uniform, o_.proposal_refresh,
                       o_.proposal_time_share, std::move(stop));
    }
  }

  // The next `proposals` calls of Next propose (an epoch); then Next says it is done.
  // (A chain restarted between epochs: the last proposal's outcome is not its own.)
  void StartEpoch(int64_t proposals) {
    left_ = proposals;
    arm_ = -1;
  }

  bool Next(UnitMoves& state, Proposal* p) {
    if (left_ <= 0 || stuck_) return false;
    --left_;
    if (bandit_ && arm_ >= 0) {
      const double gain = Gain(before_, state.score());
      bandit_->Reward(arm_, gain);
      heat_->Reward(heat_arm_, gain);
    }
    arm_ = -1;
    before_ = state.score();
    p->log_correction = 0;
    if (context_ && context_->ready() && rng_.Uniform() < o_.guide_share && Guided(state, p)) {
      return true;
    }
    if (!learned_ || !(rng_.Uniform() < o_.proposal_share) || !learned_->Propose(state, rng_, p))
      Propose(state, p);
    return true;
  }

  // A move tried (Metropolis::on_tried): a labelled example for the scorer, a single unit's move
  // from a feasible placement. Exact when its simulation ran to the end, else censored at the
  // value it had to stay below.
  void Tried(const UnitMoves& state, const Proposal& p, sim::DeviceId to, const Score& s,
             double accept_below) {
    if (!scorer_ || p.units.size() != 1 || !context_->ready()) return;
    const Score& current = state.score();
    if (!current.feasible || current.value <= 0) return;
    const auto device_of = [&state](UnitId v) { return state.device(v); };
    const MoveFeatures f = context_->Features(p.units[0], to, device_of);
    if (s.feasible) {
      const double change = (s.value - current.value) / current.value;
      scale_ = 0.99 * scale_ + 0.01 * std::abs(change);
      scorer_->Learn(f, change, /*exact=*/true);
    } else if (std::isfinite(accept_below)) {
      scorer_->Learn(f, (accept_below - current.value) / current.value, /*exact=*/false);
    }
  }
  int64_t guided() const { return guided_; }

  const MoveScorer* scorer() const { return scorer_ ? &*scorer_ : nullptr; }

  // The learned proposal's moves (null without one).
  const LearnedMoves* learned() const { return learned_ ? &*learned_ : nullptr; }

  // The units on the critical path of the current placement (StepSimulator::CriticalPath): only
  // they can shorten the step at once. Called at every re-base.
  void FindCritical(UnitMoves& state) {
    for (UnitId v : critical_) is_critical_[v] = 0;
    critical_.clear();
    sim::IncrementalEvaluator* incremental = state.evaluator().Incremental();
    if (incremental == nullptr) return;  // no step simulation: no critical path
    std::vector<sim::OpId> path;
    if (context_) {
      // The guide reads the whole simulation (loads, memory), at the price of the critical path.
      sim::Timing timing;
      const sim::Evaluation e = state.evaluator().EvaluateTimed(state.current(), &timing);
      if (e.feasible) context_->Refresh(e, timing.critical_path);
      path = std::move(timing.critical_path);
    } else {
      path = incremental->CriticalPath(state.current());
    }
    for (sim::OpId op : path) {
      const UnitId v = m_.unit_of_op[op];
      if (!is_critical_[v]) critical_.push_back(v);
      is_critical_[v] = 1;
    }
  }

  bool stuck() const { return stuck_; }
  // The control's shares as they are now (bandit: the six kinds, then the three temperatures);
  // empty without control.
  std::vector<double> control_shares() const {
    if (!bandit_) return {};
    std::vector<double> shares = bandit_->probabilities();
    shares.insert(shares.end(), heat_->probabilities().begin(), heat_->probabilities().end());
    return shares;
  }
  // The units of the current critical path, in its order (FindCritical).
  const std::vector<UnitId>& critical() const { return critical_; }
  // The factor of the schedule's temperature for the proposal just made (the control's; 1
  // without one).
  double heat() const { return bandit_ ? kHeat[static_cast<size_t>(heat_arm_)] : 1.0; }

 private:
  // What a proposal gained: the relative fall of the current value (a feasible one after an
  // infeasible one: 1).
  static double Gain(const Score& before, const Score& after) {
    if (!after.feasible) return 0;
    if (!before.feasible) return 1;
    return before.value > 0 ? std::max(0.0, (before.value - after.value) / before.value) : 0;
  }

  sim::DeviceId DeviceOfOp(const UnitMoves& state, sim::OpId op) const {
    return state.device(m_.unit_of_op[op]);
  }

  void Propose(const UnitMoves& state, Proposal* p) {
    const Units& units = m_.units;
    std::vector<UnitId>& moved = p->units;
    std::vector<sim::DeviceId>& targets = p->targets;
    moved.clear();
    // The kind: drawn by the control's shares (arm = source × 3 + kind: a critical unit or any;
    // its scope, a run, itself) or by the fixed ones.
    bool critical = false;
    double kind = 0;
    if (bandit_) {
      arm_ = bandit_->Pick(rng_);
      heat_arm_ = heat_->Pick(rng_);
      critical = arm_ < 3;
      const double at[3] = {0, o_.scope_move, o_.scope_move + o_.run_move};
      kind = at[arm_ % 3];
    } else {
      critical = rng_.Uniform() < o_.critical_unit;
    }
    const UnitId u = !critical_.empty() && critical ? critical_[rng_.Below(critical_.size())]
                                                    : static_cast<UnitId>(rng_.Below(units.size()));
    const sim::DeviceId from = state.device(u);
    const auto& groups_of_u = m_.groups.of_unit[u];
    if (!bandit_) kind = rng_.Uniform();
    if (kind < o_.scope_move && !groups_of_u.empty()) {
      moved = m_.groups.members[groups_of_u[rng_.Below(groups_of_u.size())]];
    } else {
      moved.push_back(u);
    }
    if (kind >= o_.scope_move && kind < o_.scope_move + o_.run_move) {
      const size_t length = 2 + rng_.Below(7);
      while (moved.size() < length) {
        const UnitId last = moved.back();
        UnitId next = units.next_id();
        for (sim::OpId s : p_.g().Successors(units[last].ops.back())) {
          const UnitId v = m_.unit_of_op[s];
          if (v != last && state.device(v) == from &&
              std::find(moved.begin(), moved.end(), v) == moved.end()) {
            next = v;
            break;
          }
        }
        if (next == units.next_id()) break;
        moved.push_back(next);
      }
    }
    // Target: mostly the device of a unit u exchanges tensors with, else any device.
    targets.clear();
    if (rng_.Uniform() < o_.neighbour_target) {
      for (sim::OpId op : units[u].ops) {
        for (auto neighbours : {p_.g().Predecessors(op), p_.g().Successors(op)}) {
          for (sim::OpId o : neighbours) {
            const sim::DeviceId d = DeviceOfOp(state, o);
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
      for (UnitId v : moved) {
        const auto& allowed = units[v].devices;
        if (std::find(allowed.begin(), allowed.end(), d) == allowed.end()) return true;
      }
      return false;
    });
    if (targets.empty()) {
      stuck_ = ++idle_ > 100 * static_cast<int64_t>(units.size()) + 1000;  // nothing can move
      arm_ = -1;  // nothing proposed, nothing to learn
      return;
    }
    idle_ = 0;
  }

  // A guided proposal: a unit of the critical path to a device drawn by the scorer, with the
  // Metropolis–Hastings ratio of that draw. False when there is none or it has nowhere to go.
  bool Guided(const UnitMoves& state, Proposal* p) {
    // Only a unit on the critical path can shorten the step at once: the guide moves those.
    if (critical_.empty()) return false;
    const UnitId u = critical_[rng_.Below(critical_.size())];
    const sim::DeviceId from = state.device(u);
    const std::vector<sim::DeviceId>& allowed = m_.units[u].devices;
    if (allowed.size() < 2) return false;
    const double tau = std::max(scale_, 1e-6);
    // ln of the draw's probabilities of the devices but `at`, for u placed by `device_of`.
    auto log_probabilities = [&](sim::DeviceId at, const auto& device_of) {
      std::vector<double> lp;
      double top = -std::numeric_limits<double>::infinity();
      for (sim::DeviceId d : allowed) {
        const double v = d == at ? -std::numeric_limits<double>::infinity()
                                 : -scorer_->Predict(context_->Features(u, d, device_of)) / tau;
        lp.push_back(v);
        top = std::max(top, v);
      }
      double sum = 0;
      for (double v : lp) sum += std::exp(v - top);
      for (double& v : lp) v -= top + std::log(sum);
      return lp;
    };
    const auto here = [&state](UnitId v) { return state.device(v); };
    const std::vector<double> there = log_probabilities(from, here);
    double r = rng_.Uniform();
    size_t pick = 0;
    for (size_t i = 0; i < allowed.size(); ++i) {
      if (allowed[i] == from) continue;
      pick = i;
      r -= std::exp(there[i]);
      if (r < 0) break;
    }
    const sim::DeviceId to = allowed[pick];
    const auto moved = [&state, u, to](UnitId v) { return v == u ? to : state.device(v); };
    const std::vector<double> back = log_probabilities(to, moved);
    const size_t from_at =
        static_cast<size_t>(std::find(allowed.begin(), allowed.end(), from) - allowed.begin());
    p->units.assign(1, u);
    p->targets.assign(1, to);
    p->log_correction = from_at < back.size() ? back[from_at] - there[pick] : 0;
    ++guided_;
    return true;
  }

  const sim::Problem& p_;
  const Moves& m_;
  const McmcOptions& o_;
  Rng& rng_;
  std::vector<UnitId> critical_;
  PerUnit<char> is_critical_;
  int64_t left_ = 0, idle_ = 0;
  bool stuck_ = false;
  std::optional<LearnedMoves> learned_;
  std::optional<MoveContext> context_;
  std::optional<MoveScorer> scorer_;
  double scale_ = 0.01;  // the mean size of the relative changes seen (the draw's τ)
  int64_t guided_ = 0;
  // The control's second choice: the proposal's temperature, a factor of the schedule's.
  static constexpr std::array<double, 3> kHeat = {0.1, 1.0, 10.0};
  std::optional<Bandit> bandit_, heat_;
  int arm_ = -1;  // the control's arm of the last proposal (-1: none)
  int heat_arm_ = 1;
  Score before_;  // the current score when it was made
};

// One Metropolis chain over the units' devices: the shared move loop (search/moves.h) with the
// proposals above and the Metropolis acceptor.
class Chain {
 public:
  Chain(const sim::Problem& p, const Moves& moves, const McmcOptions& options,
        sim::Evaluator* evaluator, uint64_t seed, std::unique_ptr<LearnedProposal> learned,
        std::function<bool()> stop, bool record_improving, const MoveScorer* pretrained)
      : o_(options),
        rng_(seed),
        learned_(std::move(learned)),
        state_(p, moves.units, *evaluator, options.rebase_every, /*track_best=*/true),
        proposer_(p, moves, options, rng_, learned_.get(), std::move(stop), pretrained) {
    state_.on_rebase = [this] { proposer_.FindCritical(state_); };
    if (record_improving) {
      state_.on_improve = [this](const std::vector<UnitId>& moved) {
        ImprovingMove& m = improving_.emplace_back();
        m.after = m.before = state_.current();
        for (UnitId v : moved) Assign(state_.units()[v], state_.device(v), &m.before);
      };
    }
  }
  Chain(const Chain&) = delete;
  Chain& operator=(const Chain&) = delete;

  // Continues from `placement`, whose score is `score`.
  void Restart(const sim::Placement& placement, const Score& score) {
    state_.Restart(placement, score);
  }

  // Up to `proposals` proposals at the temperature `temperature()`, until `out()` says the budget
  // is spent or no unit can move.
  // With windows (McmcOptions::window), one is re-solved after every `window_every` of them.
  template <typename Temperature, typename Out>
  void Run(int64_t proposals, const Temperature& temperature, const Out& out) {
    auto heated = [&] { return temperature() * proposer_.heat(); };
    Metropolis<decltype(heated)&> acceptor(rng_, heated);
    if (proposer_.scorer() != nullptr) {
      acceptor.on_tried = [this](const Proposal& p, sim::DeviceId to, const Score& s,
                                 double accept_below) {
        proposer_.Tried(state_, p, to, s, accept_below);
      };
    }
    while (proposals > 0 && !out() && !proposer_.stuck() &&
           !AtLowerBound(state_.problem(), state_.best_score())) {
      const int64_t part = o_.window > 0 ? std::min(proposals, o_.window_every) : proposals;
      proposer_.StartEpoch(part);
      RunMoves(state_, proposer_, acceptor, out);
      proposals -= part;
      if (o_.window > 0 && !out()) SolveWindow(out);
    }
    proposed_ += acceptor.proposed();
  }

  // A window of the critical path re-solved exactly: `window` units that follow one another on
  // it (fewer when their assignments exceed window_evaluations), every assignment of them to
  // their devices evaluated with the rest fixed, the best kept when it beats the current score.
  template <typename Out>
  void SolveWindow(const Out& out) {
    const std::vector<UnitId>& critical = proposer_.critical();
    if (critical.empty()) return;
    const Units& units = state_.units();
    size_t k = std::min(static_cast<size_t>(o_.window), critical.size());
    const size_t first = rng_.Below(critical.size() - k + 1);
    std::vector<UnitId> window(critical.begin() + static_cast<std::ptrdiff_t>(first),
                               critical.begin() + static_cast<std::ptrdiff_t>(first + k));
    auto assignments = [&] {
      double n = 1;
      for (UnitId v : window) n *= static_cast<double>(units[v].devices.size());
      return n;
    };
    while (window.size() > 1 && assignments() > static_cast<double>(o_.window_evaluations))
      window.pop_back();
    ++windows_;
    std::vector<size_t> digit(window.size(), 0);
    std::vector<sim::DeviceId> to(window.size()), best_to;
    Score best = state_.score();
    while (!out()) {
      bool same = true;
      for (size_t i = 0; i < window.size(); ++i) {
        to[i] = units[window[i]].devices[digit[i]];
        same = same && to[i] == state_.device(window[i]);
      }
      if (!same) {
        const Score s = state_.TryEach(window, to, ToBeat(best));
        if (s < best) {
          best = s;
          best_to = to;
        }
      }
      // The next assignment (an odometer over the units' devices); done after the last.
      size_t i = 0;
      while (i < window.size() && ++digit[i] == units[window[i]].devices.size()) digit[i++] = 0;
      if (i == window.size()) break;
    }
    if (best_to.empty()) {
      state_.Undo(window);
      return;
    }
    ++improved_windows_;
    state_.KeepEach(window, best_to, best);
  }

  const sim::Placement& best() const { return state_.best(); }
  const Score& best_score() const { return state_.best_score(); }
  int64_t proposed() const { return proposed_; }
  int64_t accepted() const { return state_.accepted(); }
  // Windows re-solved, and those that improved the current placement.
  int64_t windows() const { return windows_; }
  int64_t improved_windows() const { return improved_windows_; }
  const Score& current_score() const { return state_.score(); }
  bool stuck() const { return proposer_.stuck(); }
  const McmcProposer& proposer() const { return proposer_; }
  std::vector<ImprovingMove>& improving() { return improving_; }

 private:
  const McmcOptions& o_;
  Rng rng_;
  std::unique_ptr<LearnedProposal> learned_;
  UnitMoves state_;
  McmcProposer proposer_;
  int64_t proposed_ = 0, windows_ = 0, improved_windows_ = 0;
  std::vector<ImprovingMove> improving_;  // when recorded
};

// The chain with the best placement (the first of equals).
size_t Leader(const std::deque<Chain>& chains) {
  size_t leader = 0;
  for (size_t i = 1; i < chains.size(); ++i) {
    if (chains[i].best_score() < chains[leader].best_score()) leader = i;
  }
  return leader;
}

class McmcPlacer : public Placer {
 public:
  McmcPlacer(McmcOptions options, std::shared_ptr<StartFinder> start,
             LearnedProposalFactory learned)
      : options_(std::move(options)), start_(std::move(start)), learned_(std::move(learned)) {}
  std::string_view name() const override { return "mcmc"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    McmcOptions o = options_;
    // The policy's share of the time counts only where time alone ends the run.
    if (req.limits.evaluations > 0 || req.limits.seconds <= 0) o.proposal_time_share = 0;
    const Moves moves = MakeMoves(p);
    std::optional<MoveScorer> pretrained;
    if (o.guide != "none") {
      StatusOr<MoveScorer> read = MoveScorer::ForGuide(o.guide, o.guide_model);
      if (!read.ok()) return read.status().WithContext("mcmc.guide_model");
      pretrained = *std::move(read);
    }
    // The chains share what the start left of the limits. Without limits the search stops after
    // `evaluations_per_unit` proposals per unit (at most max_evaluations), the start's aside; with
    // a time limit only it runs until the time is spent.
    const Budget whole(req.limits, *req.evaluator);
    // The temperature falls with the time spent since the placer began (the start's included).
    const Budget time({.seconds = req.limits.seconds}, *req.evaluator);
    Start start = start_->Find(p, req);
    if (moves.units.empty()) return PlaceResult{std::move(start.placement)};
    const Budget budget(whole.Remaining(), *req.evaluator,
                        std::min(o.max_evaluations, o.evaluations_per_unit *
                                                        static_cast<int64_t>(moves.units.size())));
    const Limits per_chain = budget.Parallel(o.chains);
    std::vector<std::unique_ptr<sim::Evaluator>> forks;
    std::deque<Chain> chains;  // not movable: each refers to itself
    std::vector<Budget> budgets;
    for (int i = 0; i < o.chains; ++i) {
      sim::Evaluator* evaluator =
          i == 0 ? req.evaluator : forks.emplace_back(req.evaluator->Fork()).get();
      std::unique_ptr<LearnedProposal> learned;
      if (!o.proposal.empty()) {
        DPLACE_ASSIGN_OR_RETURN(learned, learned_(p, moves.units, *evaluator));
      }
      // A refresh of the learned proposal is cut when the time limit is spent.
      std::function<bool()> stop;
      if (req.limits.seconds > 0) stop = [&time] { return time.Spent() >= 1; };
      chains.emplace_back(p, moves, o, evaluator,
                          req.seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(i),
                          std::move(learned), std::move(stop), req.record_improving,
                          pretrained ? &*pretrained : nullptr);
      chains.back().Restart(start.placement, start.score);
      budgets.emplace_back(Limits{.evaluations = per_chain.evaluations}, *evaluator);
    }
    // A chain's evaluation share may round to none: it is spent from the start.
    const bool none = budget.limits().evaluations > 0 && per_chain.evaluations == 0;
    auto spent = [&](int i) {
      return none ? 1.0 : std::max(time.Spent(), budgets[static_cast<size_t>(i)].Spent());
    };
    auto run = [&](int i) {
      chains[static_cast<size_t>(i)].Run(
          o.epoch,
          [&] {
            return o.start_temperature *
                   std::pow(o.end_temperature / o.start_temperature, std::min(1.0, spent(i)));
          },
          [&] { return spent(i) >= 1; });
    };
    const bool threads = std::thread::hardware_concurrency() > 1;
    // A chain at the lower bound has found an optimum: nothing is left to search for.
    while (!AtLowerBound(p, chains[Leader(chains)].best_score())) {
      bool done = true;
      for (int i = 0; i < o.chains; ++i)
        done &= chains[static_cast<size_t>(i)].stuck() || spent(i) >= 1;
      if (done) break;
      if (threads) {
        std::vector<std::thread> helpers;
        for (int i = 1; i < o.chains; ++i) helpers.emplace_back(run, i);
        run(0);
        for (std::thread& t : helpers) t.join();
      } else {
        for (int i = 0; i < o.chains; ++i) run(i);
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
    int64_t proposed = 0, accepted = 0, learned = 0, refreshes = 0;
    double refresh_s = 0;
    for (const Chain& c : chains) {
      proposed += c.proposed();
      accepted += c.accepted();
      if (const LearnedMoves* l = c.proposer().learned()) {
        learned += l->proposals();
        refreshes += l->refreshes();
        refresh_s += l->refresh_s();
        DPLACE_RETURN_IF_ERROR(l->status());
      }
    }
    for (const auto& fork : forks) req.evaluator->CountEvaluations(fork->evaluations());
    const Chain& leader = chains[Leader(chains)];
    std::string note = "from " + start.placer + "; " + std::to_string(o.chains) + " chains, " +
                       std::to_string(proposed) + " proposals, " + std::to_string(accepted) +
                       " accepted" +
                       (AtLowerBound(p, leader.best_score()) ? "; at the lower bound" : "");
    if (o.control == "bandit") {
      // The leader's shares at the end: what bench/control_prior.py averages into a prior.
      std::ostringstream shares;
      shares.precision(3);
      for (double v : leader.proposer().control_shares())
        shares << (shares.tellp() > 0 ? "," : "") << v;
      note += "; control shares " + shares.str();
    }
    if (o.window > 0) {
      int64_t windows = 0, improved = 0;
      for (const Chain& c : chains) {
        windows += c.windows();
        improved += c.improved_windows();
      }
      note += "; " + std::to_string(windows) + " windows re-solved, " + std::to_string(improved) +
              " improved";
    }
    if (o.guide != "none") {
      int64_t guided = 0, examples = 0;
      for (const Chain& c : chains) {
        guided += c.proposer().guided();
        if (const MoveScorer* scorer = c.proposer().scorer()) examples += scorer->examples();
      }
      note += "; " + std::to_string(guided) + " guided (" + o.guide + ", " +
              std::to_string(examples) + " moves learned from)";
    }
    if (!o.proposal.empty()) {
      std::ostringstream guided;
      guided << "; " << learned << " from " << o.proposal << ", " << refreshes << " refreshes ("
             << (refreshes > 0 ? refresh_s / refreshes * 1e3 : 0) << " ms each)";
      note += guided.str();
    }
    PlaceResult result{leader.best(), std::move(note)};
    for (Chain& c : chains) {
      std::move(c.improving().begin(), c.improving().end(), std::back_inserter(result.improving));
    }
    return result;
  }

  McmcOptions options_;
  std::shared_ptr<StartFinder> start_;
  LearnedProposalFactory learned_;
};

}  // namespace

void ReadOptions(OptionReader& r, McmcOptions* o) {
  r.Read("start_temperature", &o->start_temperature, 1e-12, 10,
         "relative worsening accepted with probability 1/e at the start");
  r.Read("end_temperature", &o->end_temperature, 1e-12, 10,
         "... at the end (geometric cooling over the budget)");
  r.Read("chains", &o->chains, 1, 64, "Metropolis chains side by side (one thread each)");
  r.Read("epoch", &o->epoch, 1, int64_t{1} << 40,
         "proposals of each chain between meetings (a worse chain continues from the best)");
  r.Read("rebase_every", &o->rebase_every, 1, int64_t{1} << 40,
         "accepted moves between re-bases of the incremental simulation");
  r.Read("scope_move", &o->scope_move, 0, 1, "share of proposals that move a whole group");
  r.Read("run_move", &o->run_move, 0, 1,
         "share that move a run of units following one another on a device");
  r.Read("neighbour_target", &o->neighbour_target, 0, 1,
         "share whose target is the device of a neighbouring unit");
  r.Read("critical_unit", &o->critical_unit, 0, 1,
         "share that move a unit on the critical path (step objective)");
  r.ReadChoice("control", &o->control, {"fixed", "bandit"},
               "fixed: the shares above; bandit: learned on the instance as the chain runs, the "
               "shares above its prior");
  r.Read("control_floor", &o->control_floor, 0, 1,
         "bandit: the share of its draws kept on the prior (every kind stays reachable)");
  r.Read("control_rate", &o->control_rate, 0, 10, "bandit: its learning rate");
  std::vector<std::string> prior;
  r.Read("control_prior", &prior,
         "bandit: its prior, nine shares: the six kinds (critical, any) x (scope, run, alone), "
         "then the temperatures 0.1, 1, 10 x the schedule's (bench/control_prior.py); empty: the "
         "fixed shares");
  if (!prior.empty()) {
    std::vector<double> shares;
    for (const std::string& text : prior) {
      size_t used = 0;
      double v = -1;
      try {
        v = std::stod(text, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != text.size() || !(v >= 0) || !std::isfinite(v)) {
        r.Fail("control_prior", "'" + text + "' is not a share (a number >= 0)");
        return;
      }
      shares.push_back(v);
    }
    const auto positive = [](auto first, auto last) {
      return std::any_of(first, last, [](double v) { return v > 0; });
    };
    if (shares.size() != 9) {
      r.Fail("control_prior", "takes nine shares, not " + std::to_string(shares.size()));
    } else if (!positive(shares.begin(), shares.begin() + 6) ||
               !positive(shares.begin() + 6, shares.end())) {
      r.Fail("control_prior", "the kinds' shares and the temperatures' must each have one > 0");
    } else {
      o->control_prior = std::move(shares);
    }
  }
  r.ReadChoice("guide", &o->guide, {"none", "hand", "learned"},
               "guided proposals by a move scorer: none, hand (hand-set weights) or learned (fit "
               "online on the chain's exact evaluations)");
  r.Read("guide_share", &o->guide_share, 0, 1, "share of the proposals the guide makes");
  ReadGuideModel(r, &o->guide_model);
  r.Read("window", &o->window, 0, 16,
         "units of the critical path re-solved together exactly (every assignment), 0: none");
  r.Read("window_every", &o->window_every, 1, int64_t{1} << 40, "proposals between windows");
  r.Read("window_evaluations", &o->window_evaluations, 1, 1 << 20,
         "the most assignments a window tries (it shrinks to fit)");
  r.Read("evaluations_per_unit", &o->evaluations_per_unit, 1, 1 << 20,
         "proposals per unit without --time-limit or --evaluations");
  r.Read("max_evaluations", &o->max_evaluations, 1, int64_t{1} << 40, "... at most this many");
  r.Read("proposal", &o->proposal,
         "a learned proposal: a learned method with a bundled policy (placeto, gdp) or a policy "
         "file (dplace train); empty: none");
  r.Read("proposal_share", &o->proposal_share, 0, 1, "share of proposals drawn from it");
  r.Read("proposal_uniform", &o->proposal_uniform, 0, 1,
         "weight of the uniform proposal in its mixture (keeps every placement reachable)");
  r.Read("proposal_refresh", &o->proposal_refresh, 1, int64_t{1} << 40,
         "accepted moves between recomputing its distributions");
  r.Read("proposal_time_share", &o->proposal_time_share, 0, 1,
         "on a time budget alone, the most of the time its refreshes may take (0: no limit)");
}

std::unique_ptr<Placer> MakeMcmcPlacer(McmcOptions options, std::shared_ptr<StartFinder> start,
                                       LearnedProposalFactory learned) {
  return std::make_unique<McmcPlacer>(std::move(options), std::move(start), std::move(learned));
}

}  // namespace dplace::place
