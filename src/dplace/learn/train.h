// Training a policy (`dplace train`): REINFORCE or PPO with a per-step baseline and an entropy
// bonus over episodes of the environment (env.h) on a set of problems. Each update plays `episodes`
// episodes, `samples` of each problem (slot s: problem (update × episodes / samples + s / samples)
// mod the number of problems), each from its own seed,
// then, per epoch of the algorithm (REINFORCE: 1), takes the mean of their gradients in slot order
// and makes one Adam step, the learning rate falling linearly from lr to lr_end over the updates.
// Under `mpirun -n N` the episodes of an update are dealt to the ranks and the gradients gathered
// in the same slot order, so the result equals the single-process run with the same seed bit for
// bit. Checkpoints hold the policy, the optimiser, the baselines and the update count: resuming one
// gives the same next update as not stopping.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/problem.h"

namespace dplace::learn {

struct TrainProblem {
  std::string name;  // graph@cluster
  std::shared_ptr<const sim::Problem> problem;
};

// The policy-gradient algorithm (rollout.h PolicyGradient) and its hyper-parameters.
struct AlgorithmOptions {
  double entropy = 0.01;     // weight of the entropy bonus
  int baseline_window = 16;  // episodes per problem the baseline averages
  double discount = 0.95;    // of later rewards in a step's return
  // PPO: the probability ratio's clip range (0: REINFORCE) and the gradient steps per batch of
  // episodes.
  double clip = 0;
  int epochs = 1;
  // Scale advantages by the spread of the problem's recent returns (rollout.h); whole-episode
  // policies train with it and with discount 1.
  bool problem_scale = false;
};
// The options of an algorithm by name: "reinforce" (clip 0, 1 epoch) or "ppo" (clip 0.2 and 4
// epochs unless `base` sets them); the other fields from `base`. InvalidInput for another name.
StatusOr<AlgorithmOptions> AlgorithmByName(const std::string& name, AlgorithmOptions base);

struct TrainOptions {
  std::string method = "placeto";  // placeto, colocrl, hdp or gdp
  int groups = 0;                  // hdp: the grouper's most groups (0: 256)
  double max_grad_norm = 0;        // clip the gradient's norm to this (0: no clipping)
  // Budgets: training stops at the first one reached (0: none; updates 0 with no other: 100).
  int64_t updates = 0;
  int64_t evaluations = 0;
  double seconds = 0;
  int episodes = 4;  // per update
  // Episodes of the same problem in an update (0: 4 for whole-episode policies when that divides
  // `episodes`, else 1). Whole-episode policies' baselines include the update's own samples.
  int samples = 0;
  uint64_t seed = 1;
  int hidden = 32;
  double lr = 1e-3, lr_end = 1e-4;
  AlgorithmOptions algorithm;  // REINFORCE unless set (AlgorithmByName)
  int max_units = 256;         // coarsen problems of more units
  std::string out;             // the trained policy
  // Written every checkpoint_every updates and at the end; "{update}" in the name becomes the
  // update count (one file per checkpoint).
  std::string checkpoint;
  int checkpoint_every = 0;
  std::string resume;  // a checkpoint to continue from
  std::string log;     // learning curve: .csv or .json
  std::string init;    // start from this policy instead of fresh weights
  // Where a problem's episodes begin (a placement of every op of it);
  // null or an empty placement: each unit on its fastest device.
  std::function<sim::Placement(const std::shared_ptr<const sim::Problem>&)> start;
  // Imitation of the search instead of policy gradients, when set: per problem what a long search
  // found (its label).
  //
  // Its best placement alone (`steps` empty): an episode starts from the label or (as often) from
  // where episodes start (`start`: the searches' start), with 0 to `perturb` (drawn uniformly)
  // random unit moves; every unit is kept where it is (teacher forcing) and the loss is the
  // cross-entropy between the policy's distribution for each unit and the label's device: half
  // its mean over all units, half over the units the moves displaced. The log's mean_return is
  // then the share of units whose likeliest device is the label's, mean_cost the loss.
  //
  // Its improving moves (`steps`: the placements before and after each move the search kept that
  // improved its current placement): an episode starts before a step drawn uniformly, moved by 0
  // to `perturb` random unit moves; the units where it differs from the step's after are the
  // moves to imitate, and the loss is their mean negative log-probability under the proposal
  // that mcmc.proposal draws from the policy (place/search/learned_proposal.h): unit u with
  // probability ∝ 1 − π_u(where it is), then d with π_u(d) / that, so
  // ln q(u → d) = ln π_u(d) − ln Σ_v (1 − π_v(where v is)). The log's mean_return is then the
  // share of those units whose likeliest device is the step's, mean_cost the loss.
  struct Label {
    sim::Placement best;
    std::vector<std::pair<sim::Placement, sim::Placement>> steps;
  };
  std::function<Label(const std::shared_ptr<const sim::Problem>&)> label;
  int perturb = 8;
  // Policy gradients from a mix of starts instead of `start` alone: each episode begins, drawn
  // alike, from a random placement, every unit on its fastest device, or `start` moved by 0 to
  // `perturb` random unit moves, so that a policy that keeps its start earns nothing. (The
  // environments then judge every start anew: none is reused.)
  bool mixed_starts = false;
};

struct TrainResult {
  int64_t updates = 0, episodes = 0, evaluations = 0;
  int ranks = 1;  // MPI processes that played episodes
  int rank = 0;   // this process's (only rank 0 writes files)
  double seconds = 0, cpu_seconds = 0;
  // Per problem: the cost (env.h) of its best placement and of its first episode's end.
  std::vector<double> best_cost, first_cost;
  std::vector<double> curve;  // mean episode return per update
};

// Trains; progress lines go to `progress` (null: none). Only rank 0 writes files and progress.
StatusOr<TrainResult> Train(const std::vector<TrainProblem>& problems, const TrainOptions& options,
                            std::ostream* progress);

// Whether this binary was built with MPI, and the rank/size of this process (0/1 without mpirun).
bool HaveMpi();

}  // namespace dplace::learn
