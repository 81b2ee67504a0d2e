// The one rollout loop and the REINFORCE algorithm, shared by training (train.cc) and the placers'
// fine-tuning (placeto_placer.cc). Internal to learn/ (it includes torch). Policies (policy.h) only
// map observations to logits; the algorithm owns baselines, losses and gradients.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <vector>

#include "dplace/base/rng.h"
#include "dplace/learn/env.h"
#include "dplace/learn/policy.h"

namespace dplace::learn {

struct Episode {
  int problem = 0;  // which of the trainer's problems
  std::vector<Observation> observations;
  std::vector<int32_t> actions;  // the device chosen at each step
  std::vector<double> rewards;
  double start_cost = 0, end_cost = 0;
  double best_cost = 0;  // the least cost any of its evaluations saw
  double Return() const { return start_cost - end_cost; }
};

// Plays one episode of `env` from `start`: each action drawn from the policy's softmax with `rng`,
// or the most likely one when `rng` is null. Keeps the observations when `keep` (for an update).
Episode Rollout(PlacementEnv& env, Policy& policy, const sim::Placement& start, Rng* rng,
                bool keep);

// The device drawn from `logits` (-inf: not allowed) with `rng`; the largest when `rng` is null.
int32_t Choose(const torch::Tensor& logits, Rng* rng);

struct ReinforceOptions {
  double entropy = 0.01;
  int baseline_window = 16;
  double discount = 0.95;  // of later rewards in a step's return
};

// REINFORCE with Placeto's baseline: the advantage of step t is the discounted return from t minus
// the mean such return from t of the last `baseline_window` episodes of the same problem (none
// yet: 0).
class Reinforce {
 public:
  explicit Reinforce(ReinforceOptions options) : options_(options) {}
  // The flat gradient (FlatGradients) of the episode's loss, -Σ_t A_t log π(a_t) - β Σ_t H(π),
  // divided by the number of steps, the advantages scaled to unit root mean square. Leaves the
  // policy's own gradients zeroed.
  torch::Tensor Gradient(Policy& policy, const UnitDag& dag, const Episode& episode) const;
  // Adds an episode to its problem's baseline.
  void Record(const Episode& episode);

  // The baselines as tensors in an archive, and back.
  void Save(torch::serialize::OutputArchive* archive) const;
  void Load(torch::serialize::InputArchive& archive);

 private:
  std::vector<double> Returns(const Episode& episode) const;
  ReinforceOptions options_;
  std::map<int, std::deque<std::vector<double>>> history_;  // per problem: returns per step
};

}  // namespace dplace::learn
