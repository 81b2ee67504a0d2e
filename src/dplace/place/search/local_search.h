// Local search on any evaluator (the NeurIPS 2020 paper's baseline, also used for the step
// objective): restarts, the first from the request's start (--plan; each co-location unit on its
// first op's device) or else the best of the fast heuristics (meta/best_start.h), the others from a
// random assignment of co-location units to allowed devices; from each, move one unit at a time to
// the device that improves the evaluation most, until no move helps. Infeasible placements rank
// after feasible ones (then by value). Budget: --time-limit and the evaluation count; same seed,
// same result.
#pragma once

#include <memory>
#include <string>

#include "dplace/place/options.h"
#include "dplace/place/placer.h"
#include "dplace/place/search/learned_proposal.h"
#include "dplace/place/search/score.h"

namespace dplace::place {

struct LocalSearchOptions {
  int restarts = 10;  // the paper's setting
  // A learned proposal (as McmcOptions::proposal): each pass then tries the units in the order of
  // the policy's wish to move them, 1 - π_u(its device) for the placement the pass begins from
  // (one evaluation per pass, counted), largest first, instead of a random order. Empty: none.
  std::string proposal;
  // A move scorer (move_scorer.h, as McmcOptions::guide): each pass then tries the units in the
  // order of the best change the scorer predicts for them, from features of the timed simulation
  // of the placement the pass begins from (one evaluation per pass, counted), and each unit's
  // devices in the order of their predicted change, so that a budget spent within a pass has
  // tried the likeliest moves. "hand": the hand-set weights; "learned": `guide_model`'s weights
  // (as McmcOptions::guide_model) refined on every move the search tries. "none": random order.
  std::string guide = "none";
  std::string guide_model = "bundled";
};
void ReadOptions(OptionReader& reader, LocalSearchOptions* options);

// `start` finds the first restart's start when the request has none; null: the first restart
// starts at random like the others.
// `learned` makes options.proposal's distributions (required when it is set).
std::unique_ptr<Placer> MakeLocalSearchPlacer(LocalSearchOptions options,
                                              std::shared_ptr<StartFinder> start,
                                              LearnedProposalFactory learned = nullptr);

}  // namespace dplace::place
