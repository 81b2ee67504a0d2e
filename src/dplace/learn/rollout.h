// The one rollout loop and the policy-gradient algorithms (REINFORCE, PPO), shared by training
// (train.cc) and the placers' fine-tuning (placeto_placer.cc). Internal to learn/ (it includes
// torch). Policies (policy.h) only map observations to logits; the algorithm owns baselines,
// losses and gradients.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "dplace/base/rng.h"
#include "dplace/learn/env.h"
#include "dplace/learn/policy.h"
#include "dplace/learn/train.h"

namespace dplace::learn {

struct Episode {
  int problem = 0;  // which of the trainer's problems
  std::vector<Observation> observations;
  std::vector<int32_t> actions;   // the device chosen at each step
  std::vector<double> log_probs;  // log π(action) under the policy that played it (for PPO)
  std::vector<double> rewards;
  // A whole-episode policy's own choices (policy.h Begin) and their log-probability when played.
  std::vector<int32_t> hidden;
  double hidden_log_prob = 0;
  double start_cost = 0, end_cost = 0;
  double best_cost = 0;  // the least cost any of its evaluations saw
  double Return() const { return start_cost - end_cost; }
};

// The environment's options for `policy`'s episodes: whole-episode policies are judged once, at
// the end (no evaluation between steps); per-step ones after every step that moved a unit.
EnvOptions EpisodeOptions(const Policy& policy);
// `options` as `policy` trains with: whole-episode policies with discount 1 and problem_scale.
AlgorithmOptions AlgorithmFor(const Policy& policy, AlgorithmOptions options);

// Plays one episode of `env` from `start`: each action drawn from the policy's softmax with `rng`,
// or the most likely one when `rng` is null. Keeps the observations when `keep` (for an update).
// `out`, when given, is asked before every step: true ends the episode there (a placer's time
// limit; the units not reached keep their start's devices).
Episode Rollout(PlacementEnv& env, Policy& policy, const sim::Placement& start, Rng* rng, bool keep,
                const std::function<bool()>& out = {});

// The device drawn from `logits` (-inf: not allowed) with `rng`; the largest when `rng` is null.
int32_t Choose(const torch::Tensor& logits, Rng* rng);

// Policy gradients with Placeto's baseline: the advantage of step t is the discounted return from
// t minus the mean such return from t of the last `baseline_window` episodes of the same problem
// (none yet: 0), scaled to unit root mean square over the episode (rewards are cost differences,
// small and of a size that varies by graph; scaled, the entropy bonus weighs the same everywhere).
// REINFORCE's loss is -Σ_t A_t log π(a_t) - β Σ_t H(π); PPO's (clip > 0) is
// -Σ_t min(ρ_t A_t, clip(ρ_t, 1 - ε, 1 + ε) A_t) - β Σ_t H(π) with ρ_t = π(a_t) / π_old(a_t), the
// episode's own log-probabilities as π_old, over `epochs` gradient steps on the same episodes.
// Both divided by the number of steps. At ρ = 1 (PPO's first epoch) the two gradients are equal.
// A whole-episode policy's hidden choices (hdp's groups) join the loss as one more action with the
// first step's advantage. With `problem_scale` (whole-episode policies, rewarded once at the end,
// so every step has the same advantage) advantages are scaled by the root mean square deviation of
// the problem's recent returns (at least 0.01) instead of per episode.
class PolicyGradient {
 public:
  explicit PolicyGradient(AlgorithmOptions options) : options_(options) {}
  const AlgorithmOptions& options() const { return options_; }
  // The flat gradient (FlatGradients) of the episode's loss under the policy's current weights.
  // Leaves the policy's own gradients zeroed.
  torch::Tensor Gradient(Policy& policy, const UnitDag& dag, const Episode& episode) const;
  // The scaled advantages of the episode's steps against the current baseline.
  std::vector<double> Advantages(const Episode& episode) const;
  // Adds an episode to its problem's baseline (after the batch's last epoch).
  void Record(const Episode& episode);

  // The baselines as tensors in an archive, and back.
  void Save(torch::serialize::OutputArchive* archive) const;
  void Load(torch::serialize::InputArchive& archive);

 private:
  std::vector<double> Returns(const Episode& episode) const;
  AlgorithmOptions options_;
  std::map<int, std::deque<std::vector<double>>> history_;  // per problem: returns per step
};

// The one policy-gradient update of dplace, for the trainer (train.cc: the batch over every MPI
// rank) and the learned placers' fine-tuning (placeto_placer.cc). It owns the algorithm (its
// baselines) and Adam. An update: whole-episode policies' episodes join the baseline first (the
// baseline of a problem's first update is its samples' mean, as in ColocRL and HDP), then per
// epoch of the algorithm one Adam step on the batch's mean gradient (clipped to `max_grad_norm`
// when it is > 0), then per-step policies' episodes join the baseline.
class Learner {
 public:
  Learner(Policy& policy, AlgorithmOptions options, double lr, double max_grad_norm = 0);

  // The batch's mean gradient from this process's (slot, gradient) pairs and the batch size. The
  // default sums them in slot order; the trainer gathers every rank's in slot order, so that any
  // number of ranks adds them up the same way.
  using MeanGradient =
      std::function<torch::Tensor(const std::vector<std::pair<int, torch::Tensor>>& own, int size)>;
  // `batch`: every episode of the update, by slot (the baselines see them all); `own`: the slots
  // whose gradients this process computes (all of them in one process); `dag_of`: an episode's
  // problem's units. `stop` (a placer's time limit) is asked before each gradient and each step:
  // true ends the update there, without a step and without joining the baselines after it.
  // Returns whether the update ran to its end.
  bool Update(const std::vector<Episode>& batch, const std::vector<int>& own,
              const std::function<const UnitDag&(int problem)>& dag_of,
              const MeanGradient& mean = {}, const std::function<bool()>& stop = {});

  void SetLearningRate(double lr);
  PolicyGradient& algorithm() { return algorithm_; }
  torch::optim::Adam& adam() { return adam_; }

 private:
  Policy& policy_;
  PolicyGradient algorithm_;
  torch::optim::Adam adam_;
  double max_grad_norm_;
};

}  // namespace dplace::learn
