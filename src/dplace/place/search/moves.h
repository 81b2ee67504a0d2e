// The one move loop of the searches (local_search, chains, mcmc). A search is a proposer and an
// acceptor over UnitMoves, the current placement as devices of co-location units:
//   - the proposer names the units that move together and the devices they may go to (a unit and
//     its allowed devices; a linear cluster and every device; a Metropolis proposal), or says
//     that it has nothing left to propose (a pass without improvement, the end of an epoch);
//   - the acceptor tries the targets by incremental evaluation and keeps a move or not:
//     BestImprovement keeps the best target when it beats the current score; Metropolis tries one
//     target at random and keeps it with probability exp(-relative worsening / T).
// RunMoves runs them until the budget is out, the problem's lower bound is reached or the proposer
// is done. Every evaluation goes through the UnitMoves' evaluator, so it counts against the budget.
#pragma once

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "dplace/base/rng.h"
#include "dplace/place/search/score.h"
#include "dplace/place/units.h"
#include "dplace/sim/evaluator.h"

namespace dplace::place {

// Units that move together and where they may go; an empty `targets` is a proposal that moves
// nothing (the acceptor skips it).
struct Proposal {
  std::vector<UnitId> units;
  std::vector<sim::DeviceId> targets;
  // ln(q(back) / q(there)) of an asymmetric proposal whose probabilities are known (a learned
  // one, mcmc.h): Metropolis–Hastings multiplies the acceptance by their ratio. 0: none.
  double log_correction = 0;
};

class UnitMoves {
 public:
  // `start` places every op (co-location respected); `score` is its evaluation. Kept moves re-base
  // the incremental simulation every `rebase_every` acceptances (1: each); `track_best` keeps the
  // best placement seen (a search that accepts worse moves needs it).
  UnitMoves(const sim::Problem& problem, const Units& units, sim::Evaluator& evaluator,
            int64_t rebase_every = 1, bool track_best = false);

  // Continues from `placement`, whose score is `score`; re-bases the simulation on it.
  void Restart(const sim::Placement& placement, const Score& score);

  // Puts `moved` on `to` and evaluates the placement; the move stays applied until Undo or Keep.
  Score Try(const std::vector<UnitId>& moved, sim::DeviceId to, double give_up_above) {
    for (UnitId v : moved) Assign(units_[v], to, &current_);
    return ScoreOf(incremental_ != nullptr ? incremental_->EvaluateNear(current_, give_up_above)
                                           : evaluator_.Evaluate(current_));
  }
  // Puts each unit of `moved` on its device in `to` (a joint move: a window re-solved, mcmc.h)
  // and evaluates the placement, as Try.
  Score TryEach(const std::vector<UnitId>& moved, const std::vector<sim::DeviceId>& to,
                double give_up_above) {
    for (size_t i = 0; i < moved.size(); ++i) Assign(units_[moved[i]], to[i], &current_);
    return ScoreOf(incremental_ != nullptr ? incremental_->EvaluateNear(current_, give_up_above)
                                           : evaluator_.Evaluate(current_));
  }
  // Puts `moved` back on their devices.
  void Undo(const std::vector<UnitId>& moved) {
    for (UnitId v : moved) Assign(units_[v], unit_device_[v], &current_);
  }
  // Keeps `moved` on `to` (applied by Try or now), with score `score`.
  void Keep(const std::vector<UnitId>& moved, sim::DeviceId to, const Score& score);
  // Keeps each unit of `moved` on its device in `to` (applied by TryEach or now).
  void KeepEach(const std::vector<UnitId>& moved, const std::vector<sim::DeviceId>& to,
                const Score& score);

  const sim::Problem& problem() const { return problem_; }
  const Units& units() const { return units_; }
  sim::Evaluator& evaluator() { return evaluator_; }
  const sim::Placement& current() const { return current_; }
  const Score& score() const { return score_; }
  sim::DeviceId device(UnitId unit) const { return unit_device_[unit]; }
  // The best placement seen (with track_best), else the current one.
  const sim::Placement& best() const { return track_best_ ? best_ : current_; }
  const Score& best_score() const { return track_best_ ? best_score_ : score_; }
  int64_t accepted() const { return accepted_; }

  // Called after every re-base (mcmc aims its moves at the critical path it finds there).
  std::function<void()> on_rebase;
  // Called by Keep for a move that improves the current score, before it records the move:
  // current() has the moved units where they go already, device() still says where they were.
  std::function<void(const std::vector<UnitId>& moved)> on_improve;

 private:
  // After a move is kept: the new score, a re-base when due, the best.
  void Kept(const Score& score);
  void Rebase();

  const sim::Problem& problem_;
  const Units& units_;
  sim::Evaluator& evaluator_;
  sim::IncrementalEvaluator* const incremental_;  // null: every move evaluated in full
  const int64_t rebase_every_;
  const bool track_best_;
  sim::Placement current_, best_;
  Score score_, best_score_;
  PerUnit<sim::DeviceId> unit_device_;
  int64_t accepted_ = 0;
};

// Tries every target of the proposal; keeps the best when it beats the current score.
class BestImprovement {
 public:
  // `out` (may be empty): when the search's budget is spent; the targets left are then not tried
  // (a proposal of many targets, each a costly evaluation, never runs far past the limit) and
  // the best of those tried is kept if it improves.
  explicit BestImprovement(std::function<bool()> out = {}) : out_(std::move(out)) {}

  bool Decide(UnitMoves& m, const Proposal& p) {
    sim::DeviceId best_to{-1};
    Score best = m.score();
    for (sim::DeviceId to : p.targets) {
      if (out_ && out_()) break;
      // Moves must beat `best`: the simulation may give up on one once it is sure not to.
      const Score s = m.Try(p.units, to, ToBeat(best));
      if (on_tried) on_tried(p, to, s, ToBeat(best));
      if (s < best) {
        best = s;
        best_to = to;
      }
    }
    if (best_to < 0) {
      m.Undo(p.units);
      return false;
    }
    m.Keep(p.units, best_to, best);
    return true;
  }

  // As Metropolis::on_tried: each target tried, with the value it had to beat.
  std::function<void(const Proposal&, sim::DeviceId to, const Score&, double to_beat)> on_tried;

 private:
  std::function<bool()> out_;
};

// Metropolis at the temperature `temperature()` (a relative worsening accepted with probability
// 1/e); the target is drawn from the proposal's. An infeasible state accepts any move. With a
// proposal's log_correction c the acceptance is min(1, exp(-worsening / T + c)) (Hastings).
template <typename Temperature>
class Metropolis {
 public:
  Metropolis(Rng& rng, Temperature temperature) : rng_(rng), temperature_(temperature) {}
  bool Decide(UnitMoves& m, const Proposal& p) {
    const sim::DeviceId to = p.targets[rng_.Below(p.targets.size())];
    // A worsening w is accepted with probability exp(-w / T), that is when the value is below
    // current * (1 + T * -ln r) for a uniform r drawn first, so the simulation can give up on a
    // proposal once it is sure to exceed that.
    const Score& current = m.score();
    const double accept_below =
        current.feasible
            ? current.value * (1 + temperature_() * (-std::log(std::max(rng_.Uniform(), 1e-300)) +
                                                     p.log_correction))
            : std::numeric_limits<double>::infinity();
    const Score s = m.Try(p.units, to, accept_below);
    ++proposed_;
    if (on_tried) on_tried(p, to, s, accept_below);
    // An infeasible chain wanders until it is feasible. An improvement is kept unless the
    // correction says the move is likelier proposed than its way back.
    if (!current.feasible || (s < current && p.log_correction >= 0) ||
        (s.feasible && s.value < accept_below)) {
      m.Keep(p.units, to, s);
      return true;
    }
    m.Undo(p.units);
    return false;
  }
  int64_t proposed() const { return proposed_; }

  // Called with each proposal tried, before it is kept or undone (UnitMoves::device still says
  // where its units were): the target, the score, and the value it had to stay below (a score
  // infeasible beyond it may be a simulation that gave up there). What a search learns from.
  std::function<void(const Proposal&, sim::DeviceId to, const Score&, double accept_below)>
      on_tried;

 private:
  Rng& rng_;
  Temperature temperature_;
  int64_t proposed_ = 0;
};

// The loop: proposals and their acceptance until `out()`, the lower bound, or the proposer is done
// (Next returns false).
template <typename Proposer, typename Acceptor, typename Out>
void RunMoves(UnitMoves& moves, Proposer& proposer, Acceptor& acceptor, const Out& out) {
  Proposal p;
  while (!out() && !AtLowerBound(moves.problem(), moves.best_score()) && proposer.Next(moves, &p)) {
    if (!p.targets.empty()) acceptor.Decide(moves, p);
  }
}

}  // namespace dplace::place
