// `portfolio`: runs a set of placers within one budget and returns the best placement (feasible
// first, then the smaller value), with the problem's lower bound — raised by any bound a member
// proves — and the gap to it in the note (DESIGN.md §3). The set is PlaceContext::portfolio
// (`--portfolio a,b,c`), by default every step placer: single, expert, metis, scotch, heft, m_topo,
// m_etf, m_sct, contiguous, chains, local_search, mcmc (those not built in are skipped). One-shot
// heuristics run first without a budget; the searches share what remains of --time-limit and of the
// evaluation budget equally.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "dplace/place/placer.h"

namespace dplace::place {

std::vector<std::string> DefaultPortfolio();
std::unique_ptr<Placer> MakePortfolioPlacer();

}  // namespace dplace::place
