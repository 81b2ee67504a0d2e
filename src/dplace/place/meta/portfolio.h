// `portfolio`: runs a set of placers within one budget and returns the best placement (feasible
// first, then the smaller value), with the problem's lower bound — raised by any bound a member
// proves — and the gap to it in the note (DESIGN.md §3). The set is the option
// `portfolio.members` (`--portfolio a,b,c`), by default the table's portfolio members: single,
// expert, metis, scotch, heft, m_topo, m_etf, m_sct, contiguous, chains, local_search, mcmc
// (those not built in are skipped). One-shot members run first, each with a quarter of the time
// left; the searches then run in their table order, each from the best placement so far, sharing
// what remains of the time limit and the evaluation budget by their table weights. A two-start
// search (chains) runs twice, from its own start and from the best one-shot placement, with half
// its weight each.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dplace/place/meta/catalog.h"
#include "dplace/place/options.h"

namespace dplace::place {

struct PortfolioOptions {
  std::vector<std::string> members;  // empty: the table's default members
};
void ReadOptions(OptionReader& reader, PortfolioOptions* options);

// The members are made from `catalog` now (InvalidInput for an unknown name or a member's bad
// option).
StatusOr<std::unique_ptr<Placer>> MakePortfolioPlacer(const PortfolioOptions& options,
                                                      const Catalog& catalog);

}  // namespace dplace::place
