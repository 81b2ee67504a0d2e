#include "dplace/place/search/start.h"

#include <chrono>
#include <string_view>

#include "dplace/place/registry.h"

namespace dplace::place {

Start BestHeuristic(const sim::Problem& p, const PlaceContext& ctx) {
  if (ctx.start != nullptr && ctx.start->size() == static_cast<size_t>(p.num_ops())) {
    return {*ctx.start, ScoreOf(ctx.evaluator->Evaluate(*ctx.start)), "the given start"};
  }
  Start best;
  ChainsStart chains_start;
  for (const char* name : {"single", "expert", "m_topo", "heft", "m_etf", "contiguous"}) {
    auto placer = MakePlacer(name);
    if (!placer.ok()) continue;
    PlaceContext sub{.evaluator = ctx.evaluator, .seed = ctx.seed};
    auto placed = (*placer)->Place(p, sub);
    if (!placed.ok()) continue;
    const Score s = ScoreOf(ctx.evaluator->Evaluate(*placed));
    chains_start.Offer(name, *placed, s);
    if (best.placement.empty() || s < best.score) best = {*placed, s, name};
  }
  // `chains` searches: from where it starts on its own, then from the best heuristic (as in the
  // portfolio), in a quarter of the caller's time together (the second run has what the first
  // left: nothing on nmt, whose clusters keep moving, about half on NASNet); or each with its own
  // evaluation budget.
  auto placer = MakePlacer("chains");
  if (!placer.ok()) return best;
  const auto started = std::chrono::steady_clock::now();
  for (const bool own : {true, false}) {
    const sim::Placement* start = own ? chains_start.start() : chains_start.best();
    if (!own && start == nullptr) continue;
    PlaceContext sub{.evaluator = ctx.evaluator, .seed = ctx.seed, .start = start};
    if (ctx.budget.time_limit_s > 0) {
      const double spent =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      sub.budget.time_limit_s = ctx.budget.time_limit_s / 4 - spent;
      if (sub.budget.time_limit_s < ctx.budget.time_limit_s / 100) continue;
    }
    auto placed = (*placer)->Place(p, sub);
    if (!placed.ok()) continue;
    const Score s = ScoreOf(ctx.evaluator->Evaluate(*placed));
    if (best.placement.empty() || s < best.score) best = {*placed, s, "chains"};
  }
  return best;
}

void ChainsStart::Offer(std::string_view placer, const sim::Placement& placement,
                        const Score& score) {
  if (best_.placement.empty() || score < best_.score)
    best_ = {placement, score, std::string(placer)};
  if (placer != "single" && placer != "contiguous") return;
  ++offered_;
  if (own_.placement.empty() || score < own_.score) own_ = {placement, score, std::string(placer)};
}

const sim::Placement* ChainsStart::best() const {
  if (best_.placement.empty() || (start() != nullptr && best_.placement == own_.placement))
    return nullptr;
  return &best_.placement;
}

}  // namespace dplace::place
