#include "dplace/place/meta/best_start.h"

#include <algorithm>

#include "dplace/place/budget.h"

namespace dplace::place {

void TwoStarts::Offer(const Member& placer, const sim::Placement& placement, const Score& score) {
  if (best_.placement.empty() || score < best_.score) best_ = {placement, score, placer.name};
  if (!placer.traits.own_start) return;
  ++offered_;
  if (own_.placement.empty() || score < own_.score) own_ = {placement, score, placer.name};
}

const sim::Placement* TwoStarts::best() const {
  if (best_.placement.empty() || (own() != nullptr && best_.placement == own_.placement))
    return nullptr;
  return &best_.placement;
}

BestStart::BestStart(std::vector<Member> heuristics, std::vector<Member> two_start,
                     std::vector<Member> also)
    : heuristics_(std::move(heuristics)),
      two_start_(std::move(two_start)),
      also_(std::move(also)) {}

Start BestStart::Find(const sim::Problem& p, const PlaceRequest& req) {
  if (const sim::Placement* given = StartOf(p, req)) {
    return {*given, ScoreOf(req.evaluator->Evaluate(*given)), "the given start"};
  }
  Start best;
  int own_members = 0;
  for (const Member& m : heuristics_) own_members += m.traits.own_start;
  TwoStarts starts(own_members);
  // Under an evaluation limit the start takes at most a quarter of it, the heuristics first.
  const int64_t evaluations =
      req.limits.evaluations > 0 ? std::max<int64_t>(1, req.limits.evaluations / 4) : 0;
  const Budget quarter({.evaluations = evaluations, .seconds = req.limits.seconds / 4},
                       *req.evaluator);
  auto evaluations_left = [&] {
    return req.limits.evaluations > 0 ? quarter.Remaining().evaluations : int64_t{0};
  };
  // What is left of the quarter, for a member; none where the request limits nothing.
  auto left = [&]() -> Limits {
    return {.evaluations = evaluations_left(),
            .seconds = req.limits.seconds > 0 ? quarter.Remaining().seconds : 0};
  };
  auto judge = [&](const Member& m, const sim::Placement& placement) {
    const Score s = ScoreOf(req.evaluator->Evaluate(placement));
    if (best.placement.empty() || s < best.score) best = {placement, s, m.name};
    return s;
  };
  for (Member& m : heuristics_) {
    auto placed =
        m.placer->Place(p, {.evaluator = req.evaluator, .seed = req.seed, .limits = left()});
    if (!placed.ok()) continue;
    starts.Offer(m, placed->placement, judge(m, placed->placement));
  }
  // The two-start searches: from their own start, then from the best heuristic (as in the
  // portfolio), in what is left of the quarter of the request's time and evaluations (the second
  // run has what the first left: nothing on nmt, whose clusters keep moving, about half on
  // NASNet); or, when the request limits neither, each with its own evaluation budget.
  for (Member& m : two_start_) {
    for (const bool own : {true, false}) {
      const sim::Placement* start = own ? starts.own() : starts.best();
      if (!own && start == nullptr) continue;
      PlaceRequest sub{.evaluator = req.evaluator, .seed = req.seed, .start = start};
      if (req.limits.seconds > 0 || req.limits.evaluations > 0) {
        // Less than 1% of the request's time, or no evaluation, left: none.
        if (quarter.Spent() > 0.96) continue;
        if (req.limits.seconds > 0) sub.limits.seconds = quarter.Remaining().seconds;
        sub.limits.evaluations = evaluations_left();
      }
      auto placed = m.placer->Place(p, sub);
      if (placed.ok()) judge(m, placed->placement);
    }
  }
  for (Member& m : also_) {
    const sim::Placement from = best.placement;  // a copy: judge() may replace the best
    PlaceRequest sub{.evaluator = req.evaluator, .seed = req.seed, .limits = left()};
    if (m.traits.takes_start && !from.empty()) sub.start = &from;
    auto placed = m.placer->Place(p, sub);
    if (placed.ok()) judge(m, placed->placement);
  }
  return best;
}

StatusOr<std::shared_ptr<StartFinder>> MakeBestStart(const Catalog& catalog,
                                                     const std::vector<std::string>& also) {
  std::vector<Member> heuristics, two_start, extra;
  const std::vector<std::string> names =
      catalog.Names([](const PlacerTraits& t) { return t.search_start; });
  for (const std::string& name : names) {
    DPLACE_ASSIGN_OR_RETURN(Member m, catalog.Make(name));
    heuristics.push_back(std::move(m));
  }
  for (size_t i = 0; i < also.size(); ++i) {
    const std::string& name = also[i];
    if (std::find(names.begin(), names.end(), name) != names.end() ||
        std::find(also.begin(), also.begin() + static_cast<std::ptrdiff_t>(i), name) !=
            also.begin() + static_cast<std::ptrdiff_t>(i)) {
      continue;  // a heuristic already, or named twice
    }
    DPLACE_ASSIGN_OR_RETURN(Member m, catalog.Make(name));
    extra.push_back(std::move(m));
  }
  for (const std::string& name :
       catalog.Names([](const PlacerTraits& t) { return t.two_starts; })) {
    DPLACE_ASSIGN_OR_RETURN(Member m, catalog.Make(name));
    two_start.push_back(std::move(m));
  }
  return std::shared_ptr<StartFinder>(
      std::make_shared<BestStart>(std::move(heuristics), std::move(two_start), std::move(extra)));
}

}  // namespace dplace::place
