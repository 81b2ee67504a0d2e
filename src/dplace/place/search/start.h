// Where the searches start: the caller's PlaceContext::start when it has one, else the best
// placement of the heuristics (single, expert, m_topo, heft, m_etf, contiguous, chains), each run
// once with the caller's evaluator and seed; `chains`, itself a search, with a quarter of the
// caller's time limit (its own evaluation budget without one), from the better of the `single`
// and `contiguous` placements just made (where it would start on its own, without placing them
// again).
#pragma once

#include <string>

#include "dplace/place/placer.h"
#include "dplace/place/search/score.h"

namespace dplace::place {

struct Start {
  sim::Placement placement;  // empty when no heuristic could run
  Score score;
  std::string placer;  // which heuristic it came from
};

Start BestHeuristic(const sim::Problem& p, const PlaceContext& ctx);

}  // namespace dplace::place
