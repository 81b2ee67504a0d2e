#include "dplace/place/search/start.h"

#include <string_view>

#include "dplace/place/registry.h"

namespace dplace::place {

Start BestHeuristic(const sim::Problem& p, const PlaceContext& ctx) {
  if (ctx.start != nullptr && ctx.start->size() == static_cast<size_t>(p.num_ops())) {
    return {*ctx.start, ScoreOf(ctx.evaluator->Evaluate(*ctx.start)), "the given start"};
  }
  Start best;
  for (const char* name : {"single", "expert", "m_topo", "heft", "m_etf", "contiguous", "chains"}) {
    auto placer = MakePlacer(name);
    if (!placer.ok()) continue;
    PlaceContext sub{.evaluator = ctx.evaluator, .seed = ctx.seed};
    // `chains` searches: a quarter of the caller's time, or its own evaluation budget.
    if (std::string_view(name) == "chains") sub.budget.time_limit_s = ctx.budget.time_limit_s / 4;
    auto placed = (*placer)->Place(p, sub);
    if (!placed.ok()) continue;
    const Score s = ScoreOf(ctx.evaluator->Evaluate(*placed));
    if (best.placement.empty() || s < best.score) best = {*placed, s, name};
  }
  return best;
}

}  // namespace dplace::place
