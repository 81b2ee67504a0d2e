// `mcmc`: FlexFlow-style Metropolis search on the evaluator (simulated annealing). It starts from
// the best of the fast heuristics (single, expert, m_topo, heft, m_etf) and proposes moves of
// co-location units: one unit to another allowed device, or a run of up to eight units that follow
// one another on the same device moved together. A worse placement is accepted with probability
// exp(-relative worsening / T), T falling geometrically from 2% to 0.05% over the budget;
// infeasible proposals are accepted only from an infeasible state. Budget: --time-limit and
// evaluations (default 200 per unit, at most 20,000); with an evaluation budget alone the result
// is the same for a seed.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeMcmcPlacer();

}  // namespace dplace::place
