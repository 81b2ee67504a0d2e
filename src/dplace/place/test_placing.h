// For the place/ tests: a placer's placement of a problem, made with a fresh evaluator and judged
// by another (so that the placer's own counting or caching cannot colour the judgement).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/place/baseline/baseline.h"
#include "dplace/place/meta/best_start.h"
#include "dplace/place/placer.h"
#include "dplace/place/schedule/list_scheduler.h"
#include "dplace/place/search/mcmc.h"
#include "dplace/sim/test_problems.h"
#ifdef DPLACE_HAVE_METIS
#include "dplace/place/partition/metis_placer.h"
#endif
#ifdef DPLACE_HAVE_SCOTCH
#include "dplace/place/partition/scotch_placer.h"
#endif

namespace dplace::place::testing {

struct Judged {
  sim::Placement placement;
  sim::Evaluation evaluation;
  std::string note;
};

// `request`'s evaluator is replaced; seed 7 unless it sets one.
inline Judged PlaceWith(Placer& placer, const sim::Problem& p, PlaceRequest request = {}) {
  const auto evaluator = sim::testing::EvaluatorOf(p);
  request.evaluator = evaluator.get();
  if (request.seed == PlaceRequest{}.seed) request.seed = 7;
  auto placed = placer.Place(p, request);
  EXPECT_TRUE(placed.ok()) << placer.name() << ": " << placed.status().message();
  if (!placed.ok()) return {};
  return {placed->placement, sim::testing::EvaluatorOf(p)->Evaluate(placed->placement),
          placed->note};
}

// A placer of the tests by the table's name, made through its factory with default options (mcmc
// starting from HEFT's placement); null for a name not here or a partitioner not built in.
inline std::unique_ptr<Placer> Made(std::string_view name) {
  if (name == "heft") return MakeListSchedulerPlacer(ListPolicy::kHeft);
  if (name == "m_topo") return MakeListSchedulerPlacer(ListPolicy::kTopo);
  if (name == "m_etf") return MakeListSchedulerPlacer(ListPolicy::kEtf);
  if (name == "m_sct") return MakeListSchedulerPlacer(ListPolicy::kSct);
  if (name == "single") return MakeSinglePlacer();
  if (name == "expert") return MakeExpertPlacer();
#ifdef DPLACE_HAVE_METIS
  if (name == "metis") return MakeMetisPlacer();
#endif
#ifdef DPLACE_HAVE_SCOTCH
  if (name == "scotch") return MakeScotchPlacer();
#endif
  if (name == "mcmc") {
    std::vector<Member> heuristics;
    heuristics.push_back({"heft", {}, Made("heft")});
    return MakeMcmcPlacer(
        {}, std::make_shared<BestStart>(std::move(heuristics), std::vector<Member>{}));
  }
  return nullptr;
}

}  // namespace dplace::place::testing
