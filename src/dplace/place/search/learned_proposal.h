// A learned proposal for the searches (mcmc.proposal): per unit, a distribution over the devices
// for the current placement (a policy's, made in learn/), which a search samples its moves from,
// mixed with the uniform proposal, with the Metropolis–Hastings correction (mcmc.h). No torch
// here: the search sees only the distributions.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/place/units.h"
#include "dplace/sim/evaluator.h"

namespace dplace::place {

class LearnedProposal {
 public:
  virtual ~LearnedProposal() = default;
  // Per unit u and device d, at u * num_devices + d: the probability the policy gives d for u
  // when every other unit stays where `placement` puts it (0 where u may not run). May evaluate
  // `placement` through the evaluator it was made with (counted against the search's budget).
  virtual Status Score(const sim::Placement& placement, std::vector<double>* probabilities) = 0;
};

// Makes a search's learned proposal for a problem, the search's units and one chain's evaluator.
using LearnedProposalFactory = std::function<StatusOr<std::unique_ptr<LearnedProposal>>(
    const sim::Problem& problem, const Units& units, sim::Evaluator& evaluator)>;

}  // namespace dplace::place
