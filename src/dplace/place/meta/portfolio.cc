#include "dplace/place/meta/portfolio.h"

#include <algorithm>
#include <cstdio>

#include "dplace/place/budget.h"
#include "dplace/place/meta/best_start.h"

namespace dplace::place {
namespace {

bool IsSearch(const PlacerTraits& t) {
  return t.family == Family::kSearch || t.family == Family::kExact;
}

class PortfolioPlacer : public Placer {
 public:
  explicit PortfolioPlacer(std::vector<Member> members) : members_(std::move(members)) {
    // One-shot members first, then the searches in their turn.
    std::stable_sort(members_.begin(), members_.end(), [](const Member& a, const Member& b) {
      const int ra = IsSearch(a.traits) ? 1 + a.traits.portfolio_order : 0;
      const int rb = IsSearch(b.traits) ? 1 + b.traits.portfolio_order : 0;
      return ra < rb;
    });
  }
  std::string_view name() const override { return "portfolio"; }

 private:
  StatusOr<PlaceResult> PlaceImpl(const sim::Problem& p, const PlaceRequest& req) override {
    const Budget budget(req.limits, *req.evaluator);
    struct Run {
      Member* member;
      bool own_start;  // a two-start search from its own start
      double weight;
    };
    std::vector<Run> runs;
    int own_members = 0;
    for (Member& m : members_) {
      const double weight = IsSearch(m.traits) ? m.traits.portfolio_weight : 0;
      own_members += m.traits.own_start;
      if (m.traits.two_starts) {
        runs.push_back({&m, true, weight / 2});
        runs.push_back({&m, false, weight / 2});
      } else {
        runs.push_back({&m, false, weight});
      }
    }
    double weights_left = 0;
    for (const Run& r : runs) weights_left += r.weight;
    sim::Placement best;
    Score best_score;
    TwoStarts two_starts(own_members);
    std::string winner;
    bool optimal = false;  // a member reached the lower bound; those after it did not run
    double bound = 0;
    for (const Run& run : runs) {
      if (AtLowerBound(p, best_score)) {  // an optimum: the members left cannot beat it
        optimal = true;
        break;
      }
      Member& m = *run.member;
      const PlacerTraits& t = m.traits;
      weights_left -= run.weight;
      // Searches start from the best so far; a two-start search from its own start, then from
      // the best one-shot member unless that is where it started on its own; a one-shot member
      // that takes a start (expert) gets the request's.
      const sim::Placement* start = run.own_start  ? two_starts.own()
                                    : t.two_starts ? two_starts.best()
                                    : !IsSearch(t) ? (t.takes_start ? req.start : nullptr)
                                    : best.empty() ? nullptr
                                                   : &best;
      if (t.two_starts && !run.own_start && start == nullptr) continue;
      PlaceRequest sub{.evaluator = req.evaluator, .seed = req.seed, .start = start};
      if (!IsSearch(t)) {
        // One-shot members are fast, but m_sct's LP can take seconds: a quarter of what is left.
        sub.limits.seconds = budget.Split(0.25).seconds;
      } else {
        sub.limits = budget.Split(run.weight / (weights_left + run.weight));
      }
      auto placed = m.placer->Place(p, sub);
      if (!placed.ok()) {
        if (placed.status().code() == StatusCode::kInvalidInput) continue;  // e.g. expert's plan
        return placed.status().WithContext("portfolio member " + m.name);
      }
      bound = std::max(bound, placed->proven_bound);
      const Score s = ScoreOf(req.evaluator->Evaluate(placed->placement));
      if (!IsSearch(t)) two_starts.Offer(m, placed->placement, s);
      if (best.empty() || s < best_score) {
        best = placed->placement;
        best_score = s;
        winner = m.name;
      }
    }
    if (best.empty()) return InvalidInput("portfolio: no member placed the graph");
    char gap[64] = "";
    const double lower = std::max(bound, p.LowerBound());
    if (best_score.feasible && best_score.value > 0) {
      // The gap as every table states it (docs/semantics.md): its share of the step time.
      std::snprintf(gap, sizeof gap, ", %.1f%% gap to the lower bound",
                    100 * std::max(0.0, (best_score.value - lower) / best_score.value));
    }
    return PlaceResult{.placement = std::move(best),
                       .note = "best of " + std::to_string(members_.size()) + ": " + winner + gap +
                               (optimal ? " (the members after it did not run)" : ""),
                       .proven_bound = bound};
  }

  std::vector<Member> members_;
};

}  // namespace

void ReadOptions(OptionReader& r, PortfolioOptions* o) {
  r.Read("members", &o->members, "placers to run, comma-separated (default: the table's members)");
}

StatusOr<std::unique_ptr<Placer>> MakePortfolioPlacer(const PortfolioOptions& options,
                                                      const Catalog& catalog) {
  std::vector<std::string> names =
      options.members.empty()
          ? catalog.Names([](const PlacerTraits& t) { return t.portfolio_member; })
          : options.members;
  std::vector<Member> members;
  for (const std::string& name : names) {
    DPLACE_ASSIGN_OR_RETURN(Member m, catalog.Make(name));
    if (m.traits.family == Family::kMeta) continue;  // a portfolio does not run itself
    members.push_back(std::move(m));
  }
  return std::unique_ptr<Placer>(std::make_unique<PortfolioPlacer>(std::move(members)));
}

}  // namespace dplace::place
