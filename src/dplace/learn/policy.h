// Policies: LibTorch modules that map an observation of the environment (env.h) to one logit per
// device. Internal to learn/ (it includes torch): the rest of dplace sees placeto.h and train.h.
//
// PlacetoPolicy is Placeto's graph embedding: a node MLP, message passing forward and backward in
// topological order (message_passing.h, as one autograd function), then for the current node the
// mean embeddings of its ancestors, its descendants and its parallel nodes, concatenated with its
// own, into an MLP. Where Placeto's last layer has one output per device (a policy per device
// count), dplace scores each device with one shared MLP over that summary and the device's
// features (env.h), so one policy places on any cluster. A linear head over the device features is
// added to that score, initialised to prefer the unit's current device and the devices of its
// neighbours: the untrained policy explores near its start instead of scattering every unit.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "dplace/base/rng.h"
#include "dplace/base/status.h"
#include "dplace/learn/env.h"
#include "dplace/learn/methods.h"

namespace dplace::learn {

static_assert(PolicyShape{}.node_features == kNodeFeatures &&
              PolicyShape{}.device_features == kDeviceFeatures);

// What a whole-episode policy carries through one episode (its encoder's output, its decoder's
// state, the groups it chose): made by Policy::Begin, read and advanced by Logits and Chose. A
// policy holds only its weights, so one policy plays any number of episodes at once (each chain
// of mcmc's learned proposal, each episode of a batch) without a copy.
struct EpisodeState {
  virtual ~EpisodeState() = default;
};

class Policy : public torch::nn::Module {
 public:
  // Logits of the current unit's devices, [num_devices]; -inf where it may not run. `state`: the
  // episode's (Begin), null for a per-step policy.
  virtual torch::Tensor Logits(const Observation& obs, const UnitDag& dag, EpisodeState* state) = 0;
  virtual std::string kind() const = 0;
  virtual PolicyShape shape() const = 0;

  // Whole-episode policies (colocrl, hdp, gdp) place every unit once from scratch and are judged
  // once, at the episode's end: Begin reads the episode's first observation (encoders run once per
  // episode) into the episode's state, Logits then gives each step's logits in turn and Chose
  // advances the state by the device taken (autoregressive decoders feed it back). `hidden` holds
  // the policy's own choices that are no device (hdp's groups): drawn with `rng` (the likeliest
  // when null) and appended when empty, replayed when not; `hidden_log_prob` gets their
  // log-probability (a scalar, 0 when there are none). Per-step policies (placeto) have no state.
  virtual bool whole_episode() const { return false; }
  virtual std::unique_ptr<EpisodeState> Begin(const Observation& /*first*/, const UnitDag& /*dag*/,
                                              Rng* /*rng*/, std::vector<int32_t>* /*hidden*/,
                                              torch::Tensor* hidden_log_prob) {
    *hidden_log_prob = torch::zeros({});
    return nullptr;
  }
  virtual void Chose(EpisodeState* /*state*/, const Observation& /*obs*/, int32_t /*device*/) {}

  // The logits of every step of an episode [steps, num_devices] (with gradients), from its
  // observations and actions: Begin, then Logits and Chose per step. `hidden` and
  // `hidden_log_prob` as for Begin. Policies that can score all steps at once override it.
  virtual torch::Tensor EpisodeLogits(const std::vector<Observation>& observations,
                                      const std::vector<int32_t>& actions, const UnitDag& dag,
                                      std::vector<int32_t>* hidden, torch::Tensor* hidden_log_prob);
};

class PlacetoPolicy : public Policy {
 public:
  explicit PlacetoPolicy(PolicyShape shape);
  torch::Tensor Logits(const Observation& obs, const UnitDag& dag, EpisodeState* state) override;
  std::string kind() const override { return "placeto"; }
  PolicyShape shape() const override { return shape_; }

  // The node embeddings [num_nodes, 3 × hidden] of an observation: own, forward, backward.
  torch::Tensor Embed(const Observation& obs, const UnitDag& dag);

 private:
  PolicyShape shape_;
  torch::nn::Linear node_{nullptr}, summary_{nullptr}, device_{nullptr}, score_{nullptr},
      prior_{nullptr};
  // Forward and backward pass weights: w1, b1, w2, b2 each.
  torch::Tensor fw1_, fb1_, fw2_, fb2_, bw1_, bb1_, bw2_, bb2_;
};

// The message passing of message_passing.h as an autograd operation on float or double tensors:
// h [n, width] -> m [n, width].
torch::Tensor MessagePass(const torch::Tensor& h, const torch::Tensor& w1, const torch::Tensor& b1,
                          const torch::Tensor& w2, const torch::Tensor& b2,
                          const std::vector<int32_t>& offsets, const std::vector<int32_t>& edges,
                          bool reverse);

// LibTorch's default generator (fresh weights) and its thread count belong to the process. A
// learned placer holds a TorchTurn while it runs: one runs at a time in a process, so that two
// threads placing with learned placers each get what they would alone, and torch computes on one
// thread (the same seed gives the same placement; fair against one-core searches), its thread count
// restored after. MakePolicy takes the same lock (it may be held already: it is recursive).
class TorchTurn {
 public:
  TorchTurn();
  ~TorchTurn();
  TorchTurn(const TorchTurn&) = delete;
  TorchTurn& operator=(const TorchTurn&) = delete;

 private:
  std::unique_lock<std::recursive_mutex> lock_;
  int threads_;
};

// A new policy of `kind` (a method of methods.h), its weights drawn from `seed`.
StatusOr<std::shared_ptr<Policy>> MakePolicy(const std::string& kind, PolicyShape shape,
                                             uint64_t seed);

// Policy files: a LibTorch archive with the policy's kind, shape and weights. Saving writes a
// temporary name and renames it. Loading a missing, truncated or foreign file, or one whose
// weights do not fit its shape, is InvalidInput naming the file.
// `training` says how the policy was made (problems, updates, CPU time); PolicyTrainingNote reads
// it.
Status SavePolicy(Policy& policy, const std::string& path, const std::string& training = "");
StatusOr<std::shared_ptr<Policy>> LoadPolicy(const std::string& path);
// The same inside a larger archive (checkpoints).
void WritePolicy(Policy& policy, torch::serialize::OutputArchive* archive,
                 const std::string& training = "");
StatusOr<std::shared_ptr<Policy>> ReadPolicy(torch::serialize::InputArchive& archive,
                                             const std::string& path);

// What LibTorch said when it refused a file, in one line: the first line of its message that is
// not empty (its parser's messages begin with a newline), or "LibTorch cannot read it".
std::string TorchErrorLine(const std::exception& e);

// How many of the policy's weights are NaN or infinite (a file with any is refused; training
// stops at the update that makes any).
int64_t NonFiniteWeights(Policy& policy);

// Every weight of `policy` flattened into one vector, and back (the gradients the same way).
torch::Tensor FlatGradients(Policy& policy);
void SetGradients(Policy& policy, const torch::Tensor& flat);

}  // namespace dplace::learn
