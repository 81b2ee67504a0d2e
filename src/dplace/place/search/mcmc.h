// `mcmc`: FlexFlow-style Metropolis search on the evaluator (simulated annealing). It starts from
// the request's start, else the best of the heuristics (meta/best_start.h) and proposes moves of
// co-location units: one unit, a run of up to eight units that follow one another on the same
// device, or a whole group of the unit (a name scope, ScopeGroups, or its linear cluster,
// ChainGroups, unless that holds more than half the units), to the device of a neighbouring unit or
// any allowed device. A worse placement is accepted with probability exp(-relative worsening / T),
// T falling geometrically from 1e-4 to 1e-6 over the budget; infeasible proposals are accepted only
// from an infeasible state. Proposals are simulated incrementally
// (IncrementalEvaluator::EvaluateNear). Two chains run on two threads (one after the other on a
// machine with one core), each on its own evaluator (Evaluator::Fork); every 1,000 proposals each
// continues from the best placement found so far. Budget: --time-limit (runs until it is spent) and
// evaluations (without a time limit, 200 per unit, at most 20,000), shared by the chains; a run
// that stops on evaluations gives the same result for a seed on any machine.
#pragma once

#include <memory>
#include <string>

#include "dplace/place/options.h"
#include "dplace/place/placer.h"
#include "dplace/place/search/learned_proposal.h"
#include "dplace/place/search/score.h"

namespace dplace::place {

struct McmcOptions {
  // Metropolis temperature, as a relative worsening accepted with probability 1/e: 1e-4 at the
  // start, cooling geometrically to 1e-6. Moves that leave the step time unchanged are always
  // accepted, so the chain walks the plateaus of ops off the critical path; a higher start
  // temperature (2e-2 was the first choice) lets the chain drift away from the start and never
  // come back in 2 s.
  double start_temperature = 1e-4;
  double end_temperature = 1e-6;
  // Chains run side by side, each on its own evaluator (and thread, where the machine has a
  // second core), and meet every `epoch` proposals of each: a chain whose current placement is
  // worse than the best any has found continues from that best. Their number does not depend on
  // the machine, so a run that stops on evaluations gives the same placement everywhere. On 12
  // workloads of the models suite × 3 seeds (2 s runs, two cores), against one chain: step times
  // 1.4% shorter in geometric mean (1.0% meeting every 250 proposals, 0.5% every 4,000, 0.4%
  // never meeting).
  int chains = 2;
  int64_t epoch = 1000;
  // Proposals are simulated incrementally against a base placement; any base gives exact
  // answers, a closer one a shorter re-simulation. Most accepted moves leave the step time
  // unchanged, and re-basing on each of them cost more than it saved (41,785 proposals in 2 s on
  // inception_v3's training step on v100x8-nvlink, against 54,824 when re-basing every 16th).
  int64_t rebase_every = 16;
  // Proposal mix: a whole name scope of the unit (when it has one), else a run of units that
  // follow it on its device, else the unit alone; the target is the device of a neighbouring unit
  // with probability neighbour_target. Chosen on 36 of the models suite's workloads (2 s chains):
  // against 15% / 30% / 50%, this mix gave step times 1.7% shorter in geometric mean (shorter on
  // 15, longer on 8).
  double scope_move = 0.3, run_move = 0.3, neighbour_target = 0.95;
  // Share of proposals that move a unit on the critical path of the current placement
  // (recomputed at each re-base): only those can shorten the step at once.
  double critical_unit = 0.5;
  // How the mix above is used: "fixed" draws each proposal's kind (a unit on the critical path or
  // any unit; its scope, a run from it, or it alone) with the shares above; "bandit" learns the
  // shares on the instance as the chain runs (bandit.h: Exp3 over the six kinds, the shares above
  // as its prior and `control_floor` of it kept, and over the temperature: 0.1, 1 or 10 times the
  // schedule's; rewarded by the relative improvement of the chain's current value per proposal:
  // per second measured worse, docs/learned.md).
  std::string control = "fixed";
  double control_floor = 0.3, control_rate = 0.05;
  // The bandit's prior, learned offline (bench/control_prior.py): nine shares, the six kinds in
  // the order (critical, any) × (scope, run, alone) then the three temperatures (0.1, 1, 10 times
  // the schedule's); empty: the fixed shares above and equal temperatures.
  std::vector<double> control_prior;
  // A guided share of the proposals (move_scorer.h): `guide_share` of them move one unit (drawn
  // as above: critical or any) to a device drawn from the scorer's predicted changes, q(d) ∝
  // exp(−Δ̂(d) / τ), τ the mean size of the changes seen, with the Metropolis–Hastings ratio of
  // that choice (the way back scored from the moved placement). "hand": the hand-set weights;
  // "learned": fit online on the chain's own exact evaluations; "none": no guided proposals.
  std::string guide = "none";
  double guide_share = 0.3;
  // "learned": weights fit offline to start from: "bundled" (models/move_scorer.txt,
  // bench/move_scorer_fit's), "zero" (from zero) or a move scorer file.
  std::string guide_model = "bundled";
  // Windows re-solved exactly (a large-neighbourhood step): every `window_every` proposals a chain
  // frees `window` units that follow one another on the critical path (the rest fixed) and
  // evaluates every assignment of them to their devices, at most `window_evaluations` (the window
  // shrinks until its assignments fit), keeping the best when it beats the current placement;
  // each evaluation counts against the budget. 0: none.
  int window = 0;
  int64_t window_every = 1000;
  int64_t window_evaluations = 256;
  // Without --time-limit or --evaluations: proposals per unit, and at most this many.
  int64_t evaluations_per_unit = 200;
  int64_t max_evaluations = 20000;
  // A learned proposal (`proposal`: a method with a bundled policy, e.g. gdp or placeto, or a
  // policy file; empty: none). A share `proposal_share` of the proposals then moves one unit drawn
  // from it: each unit u with weight 1 - π_u(its device) and to d with probability π_u(d) / that
  // weight, where π_u is the policy's distribution for u with the others where they are, mixed
  // with the uniform proposal (a unit, then one of its other devices, uniformly) with weight
  // `proposal_uniform`, so that every placement stays reachable; the acceptance carries the
  // Metropolis–Hastings ratio of the mixture (exact: the distributions are fixed between
  // refreshes). The distributions are recomputed for the current placement every
  // `proposal_refresh` accepted moves (one evaluation each, counted). On a time budget alone
  // (--time-limit without --evaluations) a refresh also waits until the policy has taken at
  // most `proposal_time_share` of the time (a refresh costs the time of about 1,200 evaluations:
  // docs/learned.md); a run that stops on evaluations refreshes by the count alone, so it stays
  // the same for a seed on every machine.
  std::string proposal;
  double proposal_share = 0.5, proposal_uniform = 0.1;
  int64_t proposal_refresh = 64;
  double proposal_time_share = 0.1;
};
void ReadOptions(OptionReader& reader, McmcOptions* options);

// `start` finds where the chains begin (the request's start, else the best heuristic);
// `learned` makes options.proposal's distributions (required when it is set). With the request's
// record_improving, the result carries the improving moves of the run (PlaceResult::improving).
std::unique_ptr<Placer> MakeMcmcPlacer(McmcOptions options, std::shared_ptr<StartFinder> start,
                                       LearnedProposalFactory learned = nullptr);

}  // namespace dplace::place
