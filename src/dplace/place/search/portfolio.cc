#include "dplace/place/search/portfolio.h"

#include <algorithm>
#include <cstdio>

#include "dplace/place/registry.h"
#include "dplace/place/search/score.h"

namespace dplace::place {
namespace {

bool IsSearch(std::string_view name) {
  return name == "chains" || name == "local_search" || name == "mcmc" || name == "ilp" ||
         name == "ilp_contiguous";
}

class PortfolioPlacer : public Placer {
 public:
  std::string_view name() const override { return "portfolio"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const BudgetClock clock(ctx);
    std::vector<std::string> names = ctx.portfolio.empty() ? DefaultPortfolio() : ctx.portfolio;
    // One-shot heuristics first, then the searches.
    std::stable_partition(names.begin(), names.end(),
                          [](const std::string& n) { return !IsSearch(n); });
    const auto searches =
        std::count_if(names.begin(), names.end(), [](const std::string& n) { return IsSearch(n); });
    sim::Placement best;
    Score best_score;
    std::string winner;
    double bound = p.LowerBound();
    int remaining_searches = static_cast<int>(searches);
    for (const std::string& n : names) {
      if (n == "portfolio") continue;
      DPLACE_ASSIGN_OR_RETURN(auto placer, MakePlacer(n));
      PlaceContext sub{
          .evaluator = ctx.evaluator, .seed = ctx.seed, .budget = {}, .given_plan = ctx.given_plan};
      if (IsSearch(n)) {
        if (ctx.budget.time_limit_s > 0) {
          const double left = std::max(0.0, ctx.budget.time_limit_s - clock.Elapsed());
          sub.budget.time_limit_s = std::max(left / remaining_searches, 1e-3);
        }
        if (ctx.budget.max_evaluations > 0) {
          const int64_t left =
              std::max<int64_t>(0, ctx.budget.max_evaluations - clock.Evaluations());
          sub.budget.max_evaluations = std::max<int64_t>(1, left / remaining_searches);
        }
        --remaining_searches;
      }
      auto placed = placer->Place(p, sub);
      if (!placed.ok()) {
        if (placed.status().code() == StatusCode::kInvalidInput) continue;  // e.g. expert's plan
        return placed.status().WithContext("portfolio member " + n);
      }
      bound = std::max(bound, sub.lower_bound);
      const Score s = ScoreOf(ctx.evaluator->Evaluate(*placed));
      if (best.empty() || s < best_score) {
        best = *placed;
        best_score = s;
        winner = n;
      }
    }
    if (best.empty()) return InvalidInput("portfolio: no member placed the graph");
    ctx.lower_bound = bound;
    char gap[64] = "";
    if (best_score.feasible && bound > 0) {
      std::snprintf(gap, sizeof gap, ", %.1f%% above the lower bound",
                    100 * (best_score.value / bound - 1));
    }
    ctx.note = "best of " + std::to_string(names.size()) + ": " + winner + gap;
    return best;
  }
};

}  // namespace

std::vector<std::string> DefaultPortfolio() {
  std::vector<std::string> names;
  for (const char* n : {"single", "expert", "metis", "scotch", "heft", "m_topo", "m_etf", "m_sct",
                        "contiguous", "chains", "local_search", "mcmc"}) {
    if (MakePlacer(n).ok()) names.emplace_back(n);
  }
  return names;
}

std::unique_ptr<Placer> MakePortfolioPlacer() { return std::make_unique<PortfolioPlacer>(); }

}  // namespace dplace::place
