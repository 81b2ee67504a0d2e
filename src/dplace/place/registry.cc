#include "dplace/place/registry.h"

#include <string>

#include "dplace/base/spelling.h"
#include "dplace/place/baseline/baseline.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/schedule/list_scheduler.h"
#include "dplace/place/search/chains.h"
#include "dplace/place/search/contiguous.h"
#include "dplace/place/search/local_search.h"
#include "dplace/place/search/mcmc.h"
#include "dplace/place/search/portfolio.h"
#ifdef DPLACE_HAVE_SCOTCH
#include "dplace/place/partition/scotch_placer.h"
#endif
#ifdef DPLACE_HAVE_METIS
#include "dplace/place/partition/metis_placer.h"
#endif

namespace dplace::place {
namespace {

constexpr PlacerEntry kPlacers[] = {
    {"single", "every op on the best single device that fits", MakeSinglePlacer, false, false},
    {"round_robin", "co-location units dealt to devices in turn", MakeRoundRobinPlacer, false,
     false},
    {"random", "each unit on a random allowed device (seeded)", MakeRandomPlacer, false, false},
    {"dp", "optimal contiguous max-load split (NeurIPS 2020 DP over ideals)", MakeDpPlacer, false,
     true},
    {"pipedream", "optimal split of one linear order of the layers (PipeDream's DP)",
     MakePipeDreamPlacer, false, true},
    {"local_search", "random restarts of best-improvement unit moves on the evaluator",
     [] { return MakeLocalSearchPlacer(); }, false, false},
#ifdef DPLACE_HAVE_CBC
    {"ilp",
     "non-contiguous max-load or single-sample latency integer program (CBC), with its bound",
     MakeIlpPlacer, false, true},
    {"ilp_contiguous",
     "contiguous max-load integer program (CBC) from dp's split: the same optimum",
     MakeIlpContiguousPlacer, false, true},
#endif
#ifdef DPLACE_HAVE_SCOTCH
    {"scotch", "Scotch k-way mapping weighted by compute time and transfer cost", MakeScotchPlacer,
     false, false},
#endif
#ifdef DPLACE_HAVE_METIS
    {"metis", "METIS k-way min-cut partition weighted by compute time and transfer cost",
     MakeMetisPlacer, false, false},
#endif
    {"expert",
     "the plan given with --plan; without one, the human-expert rule (contiguous layer-wise "
     "split balanced by compute time, host CPU for what no GPU runs)",
     MakeExpertPlacer, false, false},
    {"heft", "HEFT list scheduling: upward rank, earliest finish time, memory-aware",
     [] { return MakeListSchedulerPlacer(ListPolicy::kHeft); }, false, false},
    {"m_topo", "Baechi's m-TOPO: topological order filling devices by memory share",
     [] { return MakeListSchedulerPlacer(ListPolicy::kTopo); }, false, false},
    {"m_etf", "Baechi's m-ETF: earliest start time first, memory-aware",
     [] { return MakeListSchedulerPlacer(ListPolicy::kEtf); }, false, false},
    {"m_sct", "Baechi's m-SCT: m-ETF with favourite children from an LP relaxation",
     [] { return MakeListSchedulerPlacer(ListPolicy::kSct); }, false, false},
    {"contiguous",
     "contiguous runs, one per accelerator, cut where the fewest bytes cross and memory allows",
     MakeContiguousPlacer, false, false},
    {"chains",
     "linear clusters (longest paths) moved whole to where the simulated step is shortest",
     MakeChainsPlacer, false, false},
    {"mcmc", "Metropolis search over unit and run moves from the best heuristic (FlexFlow-style)",
     MakeMcmcPlacer, false, false},
    {"portfolio", "the best of a set of placers in one budget, with the gap to the lower bound",
     MakePortfolioPlacer, false, false},
};

}  // namespace

std::span<const PlacerEntry> Placers() { return kPlacers; }

StatusOr<std::unique_ptr<Placer>> MakePlacer(std::string_view name) {
  for (const PlacerEntry& e : kPlacers) {
    if (e.name == name) return e.make();
  }
  std::string names;
  std::vector<std::string> candidates = {"all"};
  for (const PlacerEntry& e : kPlacers) {
    names += (names.empty() ? "" : ", ") + std::string(e.name);
    candidates.emplace_back(e.name);
  }
  return InvalidInput("unknown placer '" + std::string(name) + "'" + DidYouMean(name, candidates) +
                      " (known: " + names + ", all)");
}

}  // namespace dplace::place
