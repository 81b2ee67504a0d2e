// Where the searches start (the StartFinder the table gives local_search and mcmc), and the two
// starts of a two-start search (chains), which the portfolio shares.
//
// BestStart: the request's start when it fits, else the best placement of the heuristics the table
// marks as search starts (single, expert, m_topo, heft, m_etf, contiguous), each run once with
// the request's evaluator and seed, and of each two-start search (chains), run twice within a
// quarter of the request's time limit: from its own start (the better of the heuristics it starts
// from, handed over rather than placed again), then from the best of all with the time the first
// run left (each with its own evaluation budget when there is no time limit). Every member runs
// within the quarter: its seconds and evaluations are what the quarter has left.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/place/meta/catalog.h"
#include "dplace/place/search/score.h"

namespace dplace::place {

// The two starts of a two-start search for a caller that runs one-shot placers: its own start,
// the better of the own-start members' placements (once each of them has been offered), and the
// best placement offered. Neither is the better start everywhere (2-s portfolio: nmt's training
// step on hetero 17.2 ms from chains' own start against 20.5–20.8 from the best heuristic;
// nasnetamobile on k80x4 286–290 ms against 274–280).
class TwoStarts {
 public:
  explicit TwoStarts(int own_start_members) : own_members_(own_start_members) {}
  // Each one-shot placer's placement, as it is made.
  void Offer(const Member& placer, const sim::Placement& placement, const Score& score);
  // The own start; null until every own-start member has been offered.
  const sim::Placement* own() const {
    return offered_ == own_members_ && offered_ > 0 ? &own_.placement : nullptr;
  }
  // The best placement offered; null when none was, or when it is own().
  const sim::Placement* best() const;

 private:
  Start own_, best_;
  int own_members_, offered_ = 0;
};

class BestStart : public StartFinder {
 public:
  // `heuristics` run in order; `two_start` searches run after them from both starts; `also`
  // (placers named as starts, e.g. a learned policy) last, each from the best placement so far
  // when it takes a start, so that it does not find the heuristics' start again.
  BestStart(std::vector<Member> heuristics, std::vector<Member> two_start,
            std::vector<Member> also = {});
  Start Find(const sim::Problem& problem, const PlaceRequest& request) override;

 private:
  std::vector<Member> heuristics_, two_start_, also_;
};

// The BestStart of the table: its search-start heuristics and two-start searches, then the placers
// named in `also` (a learned policy's placement as one more start).
StatusOr<std::shared_ptr<StartFinder>> MakeBestStart(const Catalog& catalog,
                                                     const std::vector<std::string>& also = {});

}  // namespace dplace::place
