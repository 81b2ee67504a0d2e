#include "dplace/place/search/start.h"

#include "dplace/place/registry.h"

namespace dplace::place {

Start BestHeuristic(const sim::Problem& p, const PlaceContext& ctx) {
  Start best;
  for (const char* name : {"single", "expert", "m_topo", "heft", "m_etf", "contiguous"}) {
    auto placer = MakePlacer(name);
    if (!placer.ok()) continue;
    PlaceContext sub{.evaluator = ctx.evaluator, .seed = ctx.seed};
    auto placed = (*placer)->Place(p, sub);
    if (!placed.ok()) continue;
    const Score s = ScoreOf(ctx.evaluator->Evaluate(*placed));
    if (best.placement.empty() || s < best.score) best = {*placed, s, name};
  }
  return best;
}

}  // namespace dplace::place
