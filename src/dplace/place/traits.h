// What a placer is, as its table row says (registry.cc): its family, the objectives it supports,
// whether it takes a start, and its part in the portfolio and the benches. Code that treats
// placers differently reads these, never their names.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "dplace/place/placer.h"

namespace dplace::place {

enum class Family {
  kOneShot,  // builds one placement and returns it (heuristics, partitioners, list schedulers)
  kSearch,   // spends its budget improving placements on the evaluator
  kExact,    // solves the paper's model to optimality (or to a proven bound)
  kMeta,     // runs other placers
  kLearned,  // a trained policy places (learn/), within the budget
};
std::string_view FamilyName(Family family);

struct PlacerTraits {
  Family family = Family::kOneShot;
  // Objectives it places for (bit 1 << sim::Objective).
  uint32_t objectives = 0;
  // Begins from PlaceRequest::start when given (the searches; `expert` returns it).
  bool takes_start = false;
  // A member of the default portfolio.
  bool portfolio_member = false;
  // In a portfolio: a search's share of the time left (mcmc, which keeps improving, gets most)
  // and its turn (lower first); one-shot members run first with no share.
  double portfolio_weight = 0;
  int portfolio_order = 0;
  // Run twice by the portfolio and the searches' start: from its own start and from the best
  // one-shot placement (chains: neither start is the better one everywhere).
  bool two_starts = false;
  // Its placement is one a two-start search begins from on its own (the better of them): single
  // and contiguous for chains.
  bool own_start = false;
  // One of the heuristics the searches start from when the request gives no start.
  bool search_start = false;
  // A baseline of the RL papers and Baechi (the benches' "best classic" column).
  bool classic = false;
  // Reproduces a framework's default split, which counts layers or parameters and ignores memory:
  // its placement may overflow a device where others fit (the evaluation says so).
  bool framework_rule = false;

  bool Supports(sim::Objective objective) const {
    return (objectives >> static_cast<int>(objective)) & 1u;
  }
};

constexpr uint32_t kAllObjectives = 0b1111;
constexpr uint32_t kPaperObjectives =  // the paper's model: throughput and latency, and the
                                       // pipeline schedule over the same splits
    (1u << static_cast<int>(sim::Objective::kThroughput)) |
    (1u << static_cast<int>(sim::Objective::kLatency)) |
    (1u << static_cast<int>(sim::Objective::kPipeline));

// A placer made from the table, with its name and traits: what meta placers are given.
struct Member {
  std::string name;
  PlacerTraits traits;
  std::unique_ptr<Placer> placer;
};

}  // namespace dplace::place
