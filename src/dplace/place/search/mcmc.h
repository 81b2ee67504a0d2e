// `mcmc`: FlexFlow-style Metropolis search on the evaluator (simulated annealing). It starts from
// the best of the heuristics (search/start.h) and proposes moves of co-location units: one unit, a
// run of up to eight units that follow one another on the same device, or a whole group of the
// unit (a name scope, ScopeGroups, or its linear cluster, ChainGroups, unless that holds more than
// half the units), to the device of a neighbouring unit or any allowed device. A worse placement is
// accepted with probability exp(-relative worsening / T), T falling geometrically from 1e-4 to 1e-6
// over the budget; infeasible proposals are accepted only from an infeasible state. Proposals are
// simulated incrementally (Evaluator::EvaluateNear). Two chains run on two threads (one after
// the other on a machine with one core), each on its own evaluator (Evaluator::Fork); every 1,000
// proposals each continues from the best placement found so far. Budget: --time-limit (runs until
// it is spent) and evaluations (without a time limit, 200 per unit, at most 20,000), shared by the
// chains; a run that stops on evaluations gives the same result for a seed on any machine.
#pragma once

#include <memory>

#include "dplace/place/placer.h"

namespace dplace::place {

std::unique_ptr<Placer> MakeMcmcPlacer();

}  // namespace dplace::place
