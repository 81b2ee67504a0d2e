// Where the searches start: the best placement of the fast heuristics (single, expert, m_topo,
// heft, m_etf), each run once with the caller's evaluator and seed.
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
