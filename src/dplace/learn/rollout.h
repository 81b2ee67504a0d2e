// The one episode loop (Play), the losses an update minimises (the policy gradient of REINFORCE
// and PPO, imitation) and the one learner that takes a loss, shared by training (train.cc) and
// the placers' fine-tuning (placeto_placer.cc). Internal to learn/ (it includes torch). Policies
// (policy.h) only map observations to logits; a loss owns its baselines, the learner the
// optimiser.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
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
  std::vector<place::UnitId> units;   // the unit placed at each step
  std::vector<int32_t> actions;       // the device chosen at each step
  std::vector<double> log_probs;      // log π(action) under the policy that played it (for PPO)
  std::vector<torch::Tensor> logits;  // per step, with Actor::StayAndScore
  std::vector<double> rewards;
  // A whole-episode policy's own choices (policy.h Begin) and their log-probability when played.
  std::vector<int32_t> hidden;
  double hidden_log_prob = 0;
  double start_cost = 0, end_cost = 0;
  double best_cost = 0;  // the least cost any of its evaluations saw
  // Imitation (ImitationLoss): the label's device for each step's unit, and whether the label is
  // one improving move of a search (the loss then on the units it moved) rather than a whole
  // placement.
  std::vector<int32_t> targets;
  bool label_is_move = false;
  double Return() const { return start_cost - end_cost; }
};

// How an episode's actions are chosen (Play): drawn from the policy's softmax with `rng`, its
// likeliest device, or each unit kept where it is — without asking the policy (imitation's
// episodes, whose labels say where the units belong) or with its logits for each unit kept
// (Episode::logits: a learned proposal's distributions over the placement as it is).
struct Actor {
  static Actor Sample(Rng* rng) { return {rng, false, false}; }
  static Actor Greedy() { return {nullptr, false, false}; }
  static Actor Stay() { return {nullptr, true, false}; }
  static Actor StayAndScore() { return {nullptr, true, true}; }
  Rng* rng = nullptr;
  bool stay = false;
  bool score = false;
};

// The environment's options for `policy`'s episodes: whole-episode policies are judged once, at
// the end (no evaluation between steps); per-step ones after every step that moved a unit.
EnvOptions EpisodeOptions(const Policy& policy);
// `options` as `policy` trains with: whole-episode policies with discount 1 and problem_scale.
AlgorithmOptions AlgorithmFor(const Policy& policy, AlgorithmOptions options);

// The one episode loop: plays `env` from `start`, each action chosen by `actor`. Keeps the
// observations when `keep` (for an update). `out`, when given, is asked before every step: true
// ends the episode there (a placer's time limit; the units not reached keep their start's
// devices).
Episode Play(PlacementEnv& env, Policy& policy, const sim::Placement& start, Actor actor, bool keep,
             const std::function<bool()>& out = {});

// The device drawn from `logits` (-inf: not allowed) with `rng`; the largest when `rng` is null.
int32_t Choose(const torch::Tensor& logits, Rng* rng);

// What an update minimises over a batch of episodes (Learner::Update): each episode's loss under
// the policy's current weights, `epochs` gradient steps on the same episodes, and what it keeps
// between updates (Record: the policy gradient's baselines).
class Loss {
 public:
  virtual ~Loss() = default;
  // The episode's loss, a scalar with gradients (an episode without steps: none, undefined);
  // `fit`, when given, gets how well the policy fits the episode where that means something
  // (imitation: the share of its scored units labelled right).
  virtual torch::Tensor Of(Policy& policy, const UnitDag& dag, const Episode& episode,
                           double* fit) const = 0;
  virtual int epochs() const { return 1; }
  // Adds an episode to what the loss keeps between updates: before the batch's first step when
  // record_first, else after its last.
  virtual void Record(const Episode& /*episode*/) {}
  virtual bool record_first(const Policy& /*policy*/) const { return false; }

  // The flat gradient (FlatGradients) of the episode's loss; its value in `value` when given.
  // Leaves the policy's own gradients zeroed.
  torch::Tensor Gradient(Policy& policy, const UnitDag& dag, const Episode& episode,
                         double* value = nullptr, double* fit = nullptr) const;
};

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
class PolicyGradient : public Loss {
 public:
  explicit PolicyGradient(AlgorithmOptions options) : options_(options) {}
  const AlgorithmOptions& options() const { return options_; }
  torch::Tensor Of(Policy& policy, const UnitDag& dag, const Episode& episode,
                   double* fit) const override;
  int epochs() const override { return options_.epochs; }
  // The scaled advantages of the episode's steps against the current baseline.
  std::vector<double> Advantages(const Episode& episode) const;
  // Adds an episode to its problem's baseline: a whole-episode policy's before the first step (the
  // baseline of a problem's first update is its samples' mean, as in ColocRL and HDP), a per-step
  // policy's after the last.
  void Record(const Episode& episode) override;
  bool record_first(const Policy& policy) const override { return policy.whole_episode(); }

  // The baselines as tensors in an archive, and back.
  void Save(torch::serialize::OutputArchive* archive) const;
  void Load(torch::serialize::InputArchive& archive);

 private:
  std::vector<double> Returns(const Episode& episode) const;
  AlgorithmOptions options_;
  std::map<int, std::deque<std::vector<double>>> history_;  // per problem: returns per step
};

// Imitation of labelled placements (TrainOptions::label): episodes played with Actor::Stay from a
// placement near the label, each step's unit labelled with its device there (Episode::targets).
// The loss is the cross-entropy of the labels, half on every unit and half on those whose label
// differs from where they are (few, and the ones that teach where a unit belongs rather than to
// stay); for a label that is one improving move of a search (Episode::label_is_move), the
// cross-entropy on the units it moved plus ln Σ_v (1 − π_v(where v is)), the mass of every move.
// Its fit: the share of the scored units (the moved ones for a move) whose likeliest device is
// the label's.
class ImitationLoss : public Loss {
 public:
  torch::Tensor Of(Policy& policy, const UnitDag& dag, const Episode& episode,
                   double* fit) const override;
};

// The one update of dplace, for the trainer (train.cc: the batch over every MPI rank) and the
// learned placers' fine-tuning (placeto_placer.cc), whatever the loss. It owns Adam. An update:
// the batch joins the loss's record first when the loss says so, then per epoch of the loss one
// Adam step on the batch's mean gradient (clipped to `max_grad_norm` when it is > 0), then the
// batch joins the record if it did not before.
class Learner {
 public:
  Learner(Policy& policy, double lr, double max_grad_norm = 0);

  // The batch's mean gradient from this process's (slot, gradient) pairs and the batch size. The
  // default sums them in slot order; the trainer gathers every rank's in slot order, so that any
  // number of ranks adds them up the same way.
  using MeanGradient =
      std::function<torch::Tensor(const std::vector<std::pair<int, torch::Tensor>>& own, int size)>;
  // `batch`: every episode of the update, by slot (the baselines see them all); `own`: the slots
  // whose gradients this process computes (all of them in one process); `dag_of`: an episode's
  // problem's units. `stop` (a placer's time limit) is asked before each gradient and each step:
  // true ends the update there, without a step and without joining the baselines after it.
  // `values`, when given, gets per own slot of the last epoch: (slot, loss, fit).
  // Returns whether the update ran to its end.
  bool Update(Loss& loss, const std::vector<Episode>& batch, const std::vector<int>& own,
              const std::function<const UnitDag&(int problem)>& dag_of,
              const MeanGradient& mean = {}, const std::function<bool()>& stop = {},
              std::vector<std::tuple<int, double, double>>* values = nullptr);

  void SetLearningRate(double lr);
  torch::optim::Adam& adam() { return adam_; }

 private:
  Policy& policy_;
  torch::optim::Adam adam_;
  double max_grad_norm_;
};

}  // namespace dplace::learn
