// A learned proposal for the searches (mcmc.proposal): per unit, a distribution over the devices
// for the current placement (a policy's, made in learn/), which a search samples its moves from,
// mixed with the uniform proposal, with the Metropolis–Hastings correction (mcmc.h). No torch
// here: the search sees only the distributions.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <vector>

#include "dplace/base/rng.h"
#include "dplace/base/status.h"
#include "dplace/place/units.h"
#include "dplace/sim/evaluator.h"

namespace dplace::place {

class LearnedProposal {
 public:
  virtual ~LearnedProposal() = default;
  // Per unit u and device d, at u * num_devices + d: the probability the policy gives d for u
  // when every other unit stays where `placement` puts it (0 where u may not run). May evaluate
  // `placement` through the evaluator it was made with (counted against the search's budget).
  // `stop` (may be empty) says when the search's time is spent: the model then stops, leaves
  // `probabilities` empty and returns OK (a cut, not an error: the search goes on without it).
  virtual Status Score(const sim::Placement& placement, std::vector<double>* probabilities,
                       const std::function<bool()>& stop) = 0;
};

class UnitMoves;
struct Proposal;

// Single-unit moves drawn from a LearnedProposal's distributions π mixed with the uniform
// proposal: with weight 1 - `uniform`, a unit u with probability ∝ 1 - π_u(its device) and a
// device d ≠ its own with probability π_u(d) / (1 - π_u(its device)); with weight `uniform`, a unit
// uniformly and one of its other allowed devices uniformly. Each proposal carries the
// Metropolis–Hastings log-ratio ln(q(back) / q(there)) of that mixture, exact because π stays fixed
// between refreshes (every `refresh` accepted moves of the state, and at the first proposal).
// With `time_share` > 0 (a search on a time budget) a refresh also waits until the model's time
// is at most that share of the time since the first refresh: the seconds since the last one ended
// at least (1 − share) / share times what the last one took.
class LearnedMoves {
 public:
  // `stop`: when the search's time is spent (a refresh begun then is cut, and the learned moves
  // end: a refresh never runs past the search's limit).
  LearnedMoves(const Units& units, LearnedProposal* model, double uniform, int64_t refresh,
               double time_share = 0, std::function<bool()> stop = {});
  // A move of one unit (targets of one device, or none when it can go nowhere else); false when
  // the model gave no distributions (status() says why; it is not asked again).
  bool Propose(const UnitMoves& state, Rng& rng, Proposal* p);

  int64_t proposals() const { return proposals_; }
  int64_t refreshes() const { return refreshes_; }
  double refresh_s() const { return refresh_s_; }  // seconds the model took
  const Status& status() const { return status_; }
  bool cut() const { return cut_; }  // a refresh was cut at the search's limit

 private:
  const Units& units_;
  LearnedProposal* model_;
  std::function<bool()> stop_;
  bool cut_ = false;
  double uniform_;
  int64_t refresh_;
  double time_share_;
  std::chrono::steady_clock::time_point refreshed_;  // when the last refresh ended
  double last_s_ = 0;                                // what it took
  std::vector<double> probabilities_, weights_;
  int64_t refreshed_at_ = 0, refreshes_ = 0, proposals_ = 0;
  double refresh_s_ = 0;
  Status status_;
};

// Makes a search's learned proposal for a problem, the search's units and one chain's evaluator.
using LearnedProposalFactory = std::function<StatusOr<std::unique_ptr<LearnedProposal>>(
    const sim::Problem& problem, const Units& units, sim::Evaluator& evaluator)>;

}  // namespace dplace::place
