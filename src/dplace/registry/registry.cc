#include "dplace/registry/registry.h"

#include <algorithm>
#include <string>
#include <vector>

#include "dplace/base/spelling.h"
#include "dplace/place/baseline/baseline.h"
#include "dplace/place/exact/exact.h"
#include "dplace/place/meta/best_start.h"
#include "dplace/place/meta/portfolio.h"
#include "dplace/place/schedule/list_scheduler.h"
#include "dplace/place/search/chains.h"
#include "dplace/place/search/contiguous.h"
#include "dplace/place/search/local_search.h"
#include "dplace/place/search/mcmc.h"
#include "dplace/place/search/module_splits.h"
#ifdef DPLACE_HAVE_TORCH
#include "dplace/learn/methods.h"
#include "dplace/learn/placeto.h"
#endif
#ifdef DPLACE_HAVE_SCOTCH
#include "dplace/place/partition/scotch_placer.h"
#endif
#ifdef DPLACE_HAVE_METIS
#include "dplace/place/partition/metis_placer.h"
#endif

namespace dplace::place {
namespace {

using Made = StatusOr<std::unique_ptr<Placer>>;

// A placer without options or members.
template <std::unique_ptr<Placer> (*Make)()>
Made Plain(OptionReader&, const Catalog&) {
  return Make();
}
template <ListPolicy policy>
Made List(OptionReader&, const Catalog&) {
  return MakeListSchedulerPlacer(policy);
}
template <bool contiguous>
Made Ilp(OptionReader& r, const Catalog&) {
  IlpOptions o;
  if (contiguous) o.start_share = 0.5;
  ReadOptions(r, &o);
  return contiguous ? MakeIlpContiguousPlacer(o) : MakeIlpPlacer(o);
}
// Where a search starts without a start in the request: the table's best heuristic, or the best
// of it and the placers its `start` option names.
StatusOr<std::shared_ptr<StartFinder>> SearchStart(OptionReader& r, const Catalog& c) {
  std::vector<std::string> from;
  r.Read("start", &from,
         "placers whose placements join the table's start heuristics as starts of the search, "
         "e.g. placeto (a learned policy's placement); the search starts from the best");
  return MakeBestStart(c, from);
}
template <typename Options, std::unique_ptr<Placer> (*Make)(Options, std::shared_ptr<StartFinder>)>
Made FromBestStart(OptionReader& r, const Catalog& c) {
  Options o;
  ReadOptions(r, &o);
  DPLACE_ASSIGN_OR_RETURN(auto start, SearchStart(r, c));
  return Make(o, std::move(start));
}
// The learned proposal a search's `proposal` option names (none when it is empty).
StatusOr<LearnedProposalFactory> Proposal(const std::string& search, const std::string& name) {
  if (name.empty()) return LearnedProposalFactory();
#ifdef DPLACE_HAVE_TORCH
  auto made = learn::PolicyProposal(name);
  if (!made.ok()) return made.status().WithContext(search + ".proposal");
  return made;
#else
  return InvalidInput(search + ".proposal: this dplace was built without LibTorch");
#endif
}
// A search with a learned proposal: mcmc, local_search.
template <typename Options,
          std::unique_ptr<Placer> (*Make)(Options, std::shared_ptr<StartFinder>,
                                          LearnedProposalFactory),
          const char* kName>
Made Proposed(OptionReader& r, const Catalog& c) {
  Options o;
  ReadOptions(r, &o);
  DPLACE_ASSIGN_OR_RETURN(auto start, SearchStart(r, c));
  DPLACE_ASSIGN_OR_RETURN(LearnedProposalFactory learned, Proposal(kName, o.proposal));
  return Make(o, std::move(start), std::move(learned));
}
constexpr char kMcmc[] = "mcmc";
constexpr char kLocalSearch[] = "local_search";
Made Chains(OptionReader& r, const Catalog& c) {
  ChainsOptions o;
  ReadOptions(r, &o);
  std::vector<Member> own_start;
  for (const std::string& name : c.Names([](const PlacerTraits& t) { return t.own_start; })) {
    DPLACE_ASSIGN_OR_RETURN(Member m, c.Make(name));
    own_start.push_back(std::move(m));
  }
  return MakeChainsPlacer(o, std::move(own_start));
}
#ifdef DPLACE_HAVE_TORCH
// The learned method at `kIndex` of learn::kMethods: placeto's per-step placer, or the
// whole-episode one; both start, without a start in the request, where the searches do.
template <size_t kIndex>
Made Learned(OptionReader& r, const Catalog& c) {
  constexpr const learn::Method& m = learn::kMethods[kIndex];
  if (!m.whole_episode) {
    learn::PlacetoOptions o;
    learn::ReadOptions(r, &o);
    DPLACE_ASSIGN_OR_RETURN(auto start, MakeBestStart(c));
    return learn::MakePlacetoPlacer(o, std::move(start));
  }
  learn::EpisodePlacerOptions o{.method = std::string(m.name)};
  learn::ReadOptions(r, &o);
  DPLACE_ASSIGN_OR_RETURN(auto start, MakeBestStart(c));
  return learn::MakeEpisodePlacer(o, std::move(start));
}
#endif

Made Portfolio(OptionReader& r, const Catalog& c) {
  PortfolioOptions o;
  ReadOptions(r, &o);
  return MakePortfolioPlacer(o, c);
}

constexpr uint32_t kAll = kAllObjectives;
// Traits named by what they say, so that a row reads as a sentence.
constexpr PlacerTraits kOneShot{.family = Family::kOneShot, .objectives = kAll};
// A classic baseline in the default portfolio; ...Start: also one the searches start from.
constexpr PlacerTraits kBaseline{
    .family = Family::kOneShot, .objectives = kAll, .portfolio_member = true, .classic = true};
constexpr PlacerTraits kBaselineStart{.family = Family::kOneShot,
                                      .objectives = kAll,
                                      .portfolio_member = true,
                                      .search_start = true,
                                      .classic = true};
constexpr PlacerTraits kExact{.family = Family::kExact,
                              .objectives = kPaperObjectives,
                              .portfolio_weight = 1,
                              .portfolio_order = 1};
// A pipeline framework's default split, reproduced.
constexpr PlacerTraits kFrameworkRule{
    .family = Family::kOneShot, .objectives = kAll, .framework_rule = true};
// A search in the default portfolio: its share of the time and its turn.
constexpr PlacerTraits Search(double weight, int order) {
  return {.family = Family::kSearch,
          .objectives = kAll,
          .takes_start = true,
          .portfolio_member = true,
          .portfolio_weight = weight,
          .portfolio_order = order};
}

#ifdef DPLACE_HAVE_TORCH
// A learned method's row: its name and description from the method table.
template <size_t kIndex>
constexpr PlacerEntry LearnedRow() {
  return {learn::kMethods[kIndex].name,
          learn::kMethods[kIndex].description,
          {.family = Family::kLearned, .objectives = kAll, .takes_start = true},
          Learned<kIndex>};
}
#endif

constexpr PlacerEntry kPlacers[] = {
    {"single",
     "every op on the best single device that fits",
     {.family = Family::kOneShot,
      .objectives = kAll,
      .portfolio_member = true,
      .own_start = true,
      .search_start = true,
      .classic = true},
     Plain<MakeSinglePlacer>},
    {"round_robin", "co-location units dealt to devices in turn", kOneShot,
     Plain<MakeRoundRobinPlacer>},
    {"random", "each unit on a random allowed device (seeded)", kOneShot, Plain<MakeRandomPlacer>},
    {"dp", "optimal contiguous max-load split (NeurIPS 2020 DP over ideals)", kExact,
     Plain<MakeDpPlacer>},
    {"pipedream", "optimal split of one linear order of the layers (PipeDream's DP)", kExact,
     Plain<MakePipeDreamPlacer>},
    {"local_search", "random restarts of best-improvement unit moves on the evaluator",
     Search(1, 3), Proposed<LocalSearchOptions, MakeLocalSearchPlacer, kLocalSearch>},
#ifdef DPLACE_HAVE_CBC
    {"ilp",
     "non-contiguous max-load or single-sample latency integer program (CBC), with its bound",
     kExact, Ilp<false>},
    {"ilp_contiguous",
     "contiguous max-load integer program (CBC) from dp's split: the same optimum", kExact,
     Ilp<true>},
#endif
#ifdef DPLACE_HAVE_SCOTCH
    {"scotch", "Scotch k-way mapping weighted by compute time and transfer cost", kBaseline,
     Plain<MakeScotchPlacer>},
#endif
#ifdef DPLACE_HAVE_METIS
    {"metis", "METIS k-way min-cut partition weighted by compute time and transfer cost", kBaseline,
     Plain<MakeMetisPlacer>},
#endif
    {"expert",
     "the plan given with --plan; without one, the human-expert rule (contiguous layer-wise "
     "split balanced by compute time, host CPU for what no GPU runs)",
     {.family = Family::kOneShot,
      .objectives = kAll,
      .takes_start = true,
      .portfolio_member = true,
      .search_start = true,
      .classic = true},
     Plain<MakeExpertPlacer>},
    {"uniform",
     "DeepSpeed's default pipeline split: the model's layers (repeated blocks, embedding, head) "
     "in equal counts per accelerator",
     kFrameworkRule, Plain<MakeUniformSplitPlacer>},
    {"parameters",
     "DeepSpeed's partition_method=parameters: contiguous layers balancing parameter bytes per "
     "accelerator",
     kFrameworkRule, Plain<MakeParametersSplitPlacer>},
    {"blocks",
     "torchtitan's and PiPPy's split: the repeated blocks evenly over the accelerators, "
     "embedding first, head last",
     kFrameworkRule, Plain<MakeBlocksSplitPlacer>},
    {"m_topo", "Baechi's m-TOPO: topological order filling devices by memory share", kBaselineStart,
     List<ListPolicy::kTopo>},
    {"heft", "HEFT list scheduling: upward rank, earliest finish time, memory-aware",
     kBaselineStart, List<ListPolicy::kHeft>},
    {"m_etf", "Baechi's m-ETF: earliest start time first, memory-aware", kBaselineStart,
     List<ListPolicy::kEtf>},
    {"m_sct", "Baechi's m-SCT: m-ETF with favourite children from an LP relaxation", kBaseline,
     List<ListPolicy::kSct>},
    {"contiguous",
     "contiguous runs, one per accelerator, cut where the fewest bytes cross and memory allows",
     {.family = Family::kOneShot,
      .objectives = kAll,
      .portfolio_member = true,
      .own_start = true,
      .search_start = true},
     Plain<MakeContiguousPlacer>},
    {"modules",
     "whole modules in program order cut into contiguous runs over the devices, each cut where "
     "the simulated step is best: a device map, searched (accelerate fills devices instead)",
     kOneShot, Plain<MakeModuleSplitsPlacer>},
    {"chains",
     "linear clusters (longest paths) moved whole to where the simulated step is shortest",
     {.family = Family::kSearch,
      .objectives = kAll,
      .takes_start = true,
      .portfolio_member = true,
      .portfolio_weight = 1,
      .portfolio_order = 0,
      .two_starts = true},
     Chains},
    {"mcmc", "Metropolis search over unit and run moves from the best heuristic (FlexFlow-style)",
     Search(4, 2), Proposed<McmcOptions, MakeMcmcPlacer, kMcmc>},
#ifdef DPLACE_HAVE_TORCH
    LearnedRow<0>(),
    LearnedRow<1>(),
    LearnedRow<2>(),
    LearnedRow<3>(),
#endif
    {"portfolio",
     "the best of a set of placers in one budget, with the gap to the lower bound",
     {.family = Family::kMeta, .objectives = kAll, .takes_start = true},
     Portfolio},
};

// The table as a catalog, with the run's options.
class TableCatalog : public Catalog {
 public:
  explicit TableCatalog(const PlacerOptions& options) : options_(options) {}
  StatusOr<Member> Make(std::string_view name) const override {
    DPLACE_ASSIGN_OR_RETURN(const PlacerEntry* e, FindPlacer(name));
    // A placer whose options make it its own start or member, directly or through others
    // (mcmc.start=mcmc, portfolio.members=portfolio, a.start=b with b.start=a), would be made
    // without end.
    if (std::find(making_.begin(), making_.end(), e->name) != making_.end()) {
      std::string chain;
      for (std::string_view n : making_) chain += std::string(n) + " -> ";
      return InvalidInput("the placer options make " + std::string(e->name) +
                          " its own start or member (" + chain + std::string(e->name) + ")");
    }
    making_.push_back(e->name);
    auto given = options_.find(std::string(name));
    OptionReader reader(e->name, given == options_.end() ? OptionValues{} : given->second);
    auto placer = e->make(reader, *this);
    making_.pop_back();
    if (!placer.ok()) return placer.status();
    DPLACE_RETURN_IF_ERROR(reader.Finish());
    return Member{std::string(e->name), e->traits, std::move(placer).value()};
  }
  std::vector<std::string> Names(bool (*keep)(const PlacerTraits&)) const override {
    std::vector<std::string> names;
    for (const PlacerEntry& e : kPlacers) {
      if (keep(e.traits)) names.emplace_back(e.name);
    }
    return names;
  }

 private:
  const PlacerOptions& options_;
  mutable std::vector<std::string_view> making_;  // the placers being made, outermost first
};

}  // namespace

std::string_view FamilyName(Family family) {
  switch (family) {
    case Family::kOneShot:
      return "one-shot";
    case Family::kSearch:
      return "search";
    case Family::kExact:
      return "exact";
    case Family::kMeta:
      return "meta";
    case Family::kLearned:
      return "learned";
  }
  return "";
}

std::span<const PlacerEntry> Placers() { return kPlacers; }

StatusOr<const PlacerEntry*> FindPlacer(std::string_view name) {
  for (const PlacerEntry& e : kPlacers) {
    if (e.name == name) return &e;
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

StatusOr<Member> MakePlacer(std::string_view name, const PlacerOptions& options) {
  for (const auto& [placer, values] : options) {
    if (!FindPlacer(placer).ok()) {
      return FindPlacer(placer).status().WithContext("option " + placer + "." +
                                                     values.begin()->first);
    }
  }
  return TableCatalog(options).Make(name);
}

StatusOr<std::shared_ptr<StartFinder>> SearchStart(const std::vector<std::string>& also,
                                                   const PlacerOptions& options) {
  return MakeBestStart(TableCatalog(options), also);
}

std::vector<OptionDoc> OptionDocs(const PlacerEntry& entry) {
  const PlacerOptions none;
  OptionReader reader(entry.name, {});
  (void)entry.make(reader, TableCatalog(none));
  return reader.docs();
}

}  // namespace dplace::place
