#include "dplace/place/search/start.h"

#include <string_view>

#include "dplace/place/registry.h"

namespace dplace::place {

Start BestHeuristic(const sim::Problem& p, const PlaceContext& ctx) {
  if (ctx.start != nullptr && ctx.start->size() == static_cast<size_t>(p.num_ops())) {
    return {*ctx.start, ScoreOf(ctx.evaluator->Evaluate(*ctx.start)), "the given start"};
  }
  Start best;
  Start single_or_contiguous;  // where chains would start on its own: it starts there, once
  for (const char* name : {"single", "expert", "m_topo", "heft", "m_etf", "contiguous", "chains"}) {
    auto placer = MakePlacer(name);
    if (!placer.ok()) continue;
    const std::string_view n = name;
    PlaceContext sub{.evaluator = ctx.evaluator, .seed = ctx.seed};
    if (n == "chains") {
      // `chains` searches: a quarter of the caller's time, or its own evaluation budget.
      sub.budget.time_limit_s = ctx.budget.time_limit_s / 4;
      if (!single_or_contiguous.placement.empty()) sub.start = &single_or_contiguous.placement;
    }
    auto placed = (*placer)->Place(p, sub);
    if (!placed.ok()) continue;
    const Score s = ScoreOf(ctx.evaluator->Evaluate(*placed));
    if ((n == "single" || n == "contiguous") &&
        (single_or_contiguous.placement.empty() || s < single_or_contiguous.score)) {
      single_or_contiguous = {*placed, s, name};
    }
    if (best.placement.empty() || s < best.score) best = {*placed, s, name};
  }
  return best;
}

}  // namespace dplace::place
