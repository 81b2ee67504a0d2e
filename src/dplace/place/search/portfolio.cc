#include "dplace/place/search/portfolio.h"

#include <algorithm>
#include <cstdio>

#include "dplace/place/registry.h"
#include "dplace/place/search/score.h"
#include "dplace/place/search/start.h"

namespace dplace::place {
namespace {

bool IsSearch(std::string_view name) {
  return name == "chains" || name == "local_search" || name == "mcmc" || name == "ilp" ||
         name == "ilp_contiguous";
}

// The searches run in this order, each from the best placement so far (those that take a start),
// and share the time left in proportion to their weights: mcmc, which keeps improving with time,
// gets most of it, and local_search, last, polishes what it found.
int SearchRank(std::string_view name) {
  return name == "chains" ? 0 : name == "mcmc" ? 2 : name == "local_search" ? 3 : 1;
}
double SearchWeight(std::string_view name) { return name == "mcmc" ? 4 : 1; }

class PortfolioPlacer : public Placer {
 public:
  std::string_view name() const override { return "portfolio"; }

 private:
  StatusOr<sim::Placement> PlaceImpl(const sim::Problem& p, PlaceContext& ctx) override {
    const BudgetClock clock(ctx);
    std::vector<std::string> names = ctx.portfolio.empty() ? DefaultPortfolio() : ctx.portfolio;
    // One-shot heuristics first, then the searches.
    std::stable_sort(names.begin(), names.end(), [](const std::string& a, const std::string& b) {
      const int ra = IsSearch(a) ? 1 + SearchRank(a) : 0, rb = IsSearch(b) ? 1 + SearchRank(b) : 0;
      return ra < rb;
    });
    // `chains` runs twice: from where it starts on its own (the better of the members single and
    // contiguous) and from the best one-shot member, each with half its weight. Either start can
    // lead its whole-cluster moves, and mcmc after them, further (2-s portfolio, four seeds:
    // nasnetamobile on k80x4 274–280 ms from the best one-shot member against 286–290 from its
    // own start; two seeds: nmt's training step on hetero 20.5–20.8 ms against 17.2).
    struct Run {
      std::string name;
      bool own_start;  // chains from where it starts on its own (ChainsStart)
      double weight;
    };
    std::vector<Run> runs;
    for (const std::string& n : names) {
      if (n == "portfolio") continue;
      const double weight = IsSearch(n) ? SearchWeight(n) : 0;
      if (n == "chains") {
        runs.push_back({n, true, weight / 2});
        runs.push_back({n, false, weight / 2});
      } else {
        runs.push_back({n, false, weight});
      }
    }
    double weights_left = 0;
    for (const Run& r : runs) weights_left += r.weight;
    sim::Placement best;
    Score best_score;
    ChainsStart chains_start;
    std::string winner;
    bool optimal = false;  // a member reached the lower bound; those after it did not run
    double bound = p.LowerBound();
    for (const Run& run : runs) {
      if (AtLowerBound(p, best_score)) {  // an optimum: the members left cannot beat it
        optimal = true;
        break;
      }
      const std::string& n = run.name;
      const sim::Placement* start = run.own_start   ? chains_start.start()
                                    : n == "chains" ? chains_start.best()
                                    : best.empty()  ? nullptr
                                                    : &best;
      weights_left -= run.weight;
      // Chains from the best one-shot member, unless that is where it started on its own.
      if (n == "chains" && !run.own_start && start == nullptr) continue;
      DPLACE_ASSIGN_OR_RETURN(auto placer, MakePlacer(n));
      PlaceContext sub{.evaluator = ctx.evaluator,
                       .seed = ctx.seed,
                       .budget = {},
                       .given_plan = ctx.given_plan,
                       .start = start};
      if (!IsSearch(n) && ctx.budget.time_limit_s > 0) {
        // One-shot heuristics are fast, but m_sct's LP can take seconds: a quarter of what is left.
        sub.budget.time_limit_s =
            std::max(0.25 * (ctx.budget.time_limit_s - clock.Elapsed()), 1e-3);
      } else if (IsSearch(n)) {
        const double share = run.weight / (weights_left + run.weight);
        if (ctx.budget.time_limit_s > 0) {
          const double left = std::max(0.0, ctx.budget.time_limit_s - clock.Elapsed());
          sub.budget.time_limit_s = std::max(left * share, 1e-3);
        }
        if (ctx.budget.max_evaluations > 0) {
          const int64_t left =
              std::max<int64_t>(0, ctx.budget.max_evaluations - clock.Evaluations());
          sub.budget.max_evaluations =
              std::max<int64_t>(1, static_cast<int64_t>(static_cast<double>(left) * share));
        }
      }
      auto placed = placer->Place(p, sub);
      if (!placed.ok()) {
        if (placed.status().code() == StatusCode::kInvalidInput) continue;  // e.g. expert's plan
        return placed.status().WithContext("portfolio member " + n);
      }
      bound = std::max(bound, sub.lower_bound);
      const Score s = ScoreOf(ctx.evaluator->Evaluate(*placed));
      if (!IsSearch(n)) chains_start.Offer(n, *placed, s);
      if (best.empty() || s < best_score) {
        best = *placed;
        best_score = s;
        winner = n;
      }
    }
    if (best.empty()) return InvalidInput("portfolio: no member placed the graph");
    ctx.lower_bound = bound;
    char gap[64] = "";
    if (best_score.feasible && best_score.value > 0) {
      // The gap as every table states it (docs/semantics.md): its share of the step time.
      std::snprintf(gap, sizeof gap, ", %.1f%% gap to the lower bound",
                    100 * std::max(0.0, (best_score.value - bound) / best_score.value));
    }
    ctx.note = "best of " + std::to_string(names.size()) + ": " + winner + gap +
               (optimal ? " (the members after it did not run)" : "");
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
