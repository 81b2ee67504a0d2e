// Where the searches start: the caller's PlaceContext::start when it has one, else the best
// placement of the heuristics (single, expert, m_topo, heft, m_etf, contiguous), each run once with
// the caller's evaluator and seed, and of `chains`, itself a search, run twice within a quarter of
// the caller's time limit: from the better of `single` and `contiguous` (where it starts on its
// own, without placing them again), then from the best of all with the time the first run left
// (each with its own evaluation budget when there is no time limit).
#pragma once

#include <string>
#include <string_view>

#include "dplace/place/placer.h"
#include "dplace/place/search/score.h"

namespace dplace::place {

struct Start {
  sim::Placement placement;  // empty when no heuristic could run
  Score score;
  std::string placer;  // which heuristic it came from
};

Start BestHeuristic(const sim::Problem& p, const PlaceContext& ctx);

// The two starts of `chains` for a caller that has run the one-shot heuristics: where it starts on
// its own, the better of the `single` and `contiguous` placements (handed over, so that chains does
// not make them again), and the best heuristic of all. BestHeuristic and the portfolio run chains
// from both: neither is the better one everywhere (2-s portfolio: nmt's training step on hetero
// 17.2 ms from its own start against 20.5–20.8 from the best heuristic; nasnetamobile on k80x4
// 286–290 ms against 274–280).
class ChainsStart {
 public:
  // Each one-shot heuristic's placement, as it is made.
  void Offer(std::string_view placer, const sim::Placement& placement, const Score& score);
  // Chains' own start; null until both single and contiguous have been offered.
  const sim::Placement* start() const { return offered_ == 2 ? &own_.placement : nullptr; }
  // The best placement offered; null when none was, or when it is start().
  const sim::Placement* best() const;

 private:
  Start own_, best_;
  int offered_ = 0;
};

}  // namespace dplace::place
