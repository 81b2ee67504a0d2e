// The whole-episode policies (policy.h): each reads the episode's first observation once and gives
// one device per unit in topological order.
//
// colocrl (Mirhoseini et al. 2017): an LSTM encoder over the units (their features, an embedding
//   of their op type and the mean features of their inputs' and outputs' units: the adjacency) and
//   an attentional LSTM decoder that emits one device per unit, the device taken fed back in.
// hdp (Mirhoseini et al. 2018): a feed-forward grouper (unit features and op type -> 64 -> softmax
//   over min(groups, 20 x devices, units) groups) samples a group per unit; group embeddings
//   (adjacency counts to every group, op-type histogram, summed features, row-normalised) feed a
//   bidirectional LSTM encoder and the same attentional decoder, one device per group; every unit
//   of a group goes where its group does. The groups are the policy's hidden choices: their
//   log-probability joins the devices' in the gradient.
// gdp (Zhou et al. 2019): GraphSAGE layers over the unit DAG (both directions), then attention
//   over segments of kSegment units in topological order, each attending to itself and to the
//   previous segment's outputs (Transformer-XL's recurrence: memory without gradient), all units
//   in one pass; a superposition layer scales and shifts every unit's features by the graph's
//   mean embedding (the graph conditions the policy; fine-tuning adapts it per graph).
//
// The devices: where the papers' output layer has one logit per device (a policy per device
// count), all three score each device with one MLP over the unit's (or group's) decoder output and
// the device's features of the current step (env.h: its load so far, the memory the unit would
// take there, where the unit's inputs are): one policy places on any cluster, and the placement so
// far reaches the policy as the papers' feedback did. A linear prior over the device features
// starts the untrained policy near a sensible heuristic (keep inputs together, avoid overflow).
#include <cmath>
#include <limits>

#include "dplace/learn/policy.h"
#include "dplace/learn/rollout.h"

namespace dplace::learn {
namespace {

constexpr int64_t kTypeWidth = 16;
constexpr int64_t kGrouperWidth = 64;  // HDP's grouper hidden layer
constexpr int64_t kSegment = 64;       // GDP's segment length
constexpr int64_t kHeads = 4;          // GDP's attention heads (when the width allows)
constexpr double kInf = std::numeric_limits<double>::infinity();

torch::Tensor Rows(const std::vector<float>& data, int64_t columns) {
  return torch::from_blob(const_cast<float*>(data.data()),
                          {static_cast<int64_t>(data.size()) / columns, columns}, torch::kFloat32)
      .clone();
}

torch::Tensor Index(const std::vector<int32_t>& v) {
  return torch::tensor(std::vector<int64_t>(v.begin(), v.end()), torch::kInt64);
}

// Per node the mean of x over its CSR neighbours (zeros for none).
torch::Tensor NeighbourMean(const torch::Tensor& x, const std::vector<int32_t>& offsets,
                            const std::vector<int32_t>& edges) {
  std::vector<int64_t> dst;
  std::vector<float> weight;
  for (size_t v = 0; v + 1 < offsets.size(); ++v) {
    const int32_t degree = offsets[v + 1] - offsets[v];
    for (int32_t i = offsets[v]; i < offsets[v + 1]; ++i) {
      dst.push_back(static_cast<int64_t>(v));
      weight.push_back(1.0f / static_cast<float>(degree));
    }
  }
  torch::Tensor out = torch::zeros_like(x);
  if (dst.empty()) return out;
  const torch::Tensor w = torch::tensor(weight).unsqueeze(1);
  return out.index_add(0, torch::tensor(dst, torch::kInt64), x.index_select(0, Index(edges)) * w);
}

// The first observation's unit inputs: features, the mean features of the input and output units,
// and the op type's embedding.
torch::Tensor UnitInputs(const Observation& first, const UnitDag& dag,
                         torch::nn::Embedding& types) {
  const torch::Tensor x = Rows(first.nodes, kNodeFeatures);
  return torch::cat(
      {x, NeighbourMean(x, dag.pred_offsets, dag.preds),
       NeighbourMean(x, dag.succ_offsets, dag.succs), types->forward(Index(dag.type))},
      1);
}
constexpr int64_t kUnitInputs = 3 * kNodeFeatures + kTypeWidth;

// One logit per device from a unit's representation z [k] and the step's device features.
struct DeviceScorerImpl : torch::nn::Module {
  explicit DeviceScorerImpl(int64_t k) {
    mix = register_module("mix", torch::nn::Linear(k + kDeviceFeatures, k));
    score = register_module("score", torch::nn::Linear(k, 1));
    prior = register_module("prior", torch::nn::Linear(kDeviceFeatures, 1));
    // Columns of env.cc's device features: current (start) device, busy, peak memory, static
    // memory with the unit, speed, share of input bytes there, of output bytes, of units.
    torch::NoGradGuard no_grad;
    const std::vector<float> w = {3, -1, 0, -2, 1, 2, 1, 0};
    prior->weight.copy_(torch::tensor(w).unsqueeze(0));
    prior->bias.zero_();
  }
  torch::Tensor forward(const torch::Tensor& z, const Observation& obs) {
    const torch::Tensor devices = Rows(obs.devices, kDeviceFeatures);
    const int64_t n = devices.size(0);
    const torch::Tensor u =
        torch::relu(mix->forward(torch::cat({z.expand({n, z.size(0)}), devices}, 1)));
    const torch::Tensor logits = (score->forward(u) + prior->forward(devices)).squeeze(1);
    return Mask(logits, obs);
  }
  // Every step's logits at once [steps, num_devices] from z [steps, k].
  torch::Tensor forward(const torch::Tensor& z, const std::vector<Observation>& observations) {
    const auto steps = static_cast<int64_t>(observations.size());
    const auto num_devices = static_cast<int64_t>(observations.front().allowed.size());
    std::vector<float> features;
    std::vector<uint8_t> allowed;
    for (const Observation& o : observations) {
      features.insert(features.end(), o.devices.begin(), o.devices.end());
      allowed.insert(allowed.end(), o.allowed.begin(), o.allowed.end());
    }
    const torch::Tensor devices =
        torch::from_blob(features.data(), {steps, num_devices, kDeviceFeatures}, torch::kFloat32)
            .clone();  // the backward pass reads it after `features` is gone
    const torch::Tensor u = torch::relu(mix->forward(
        torch::cat({z.unsqueeze(1).expand({steps, num_devices, z.size(1)}), devices}, 2)));
    const torch::Tensor logits = (score->forward(u) + prior->forward(devices)).squeeze(2);
    const torch::Tensor mask =
        torch::from_blob(allowed.data(), {steps, num_devices}, torch::kUInt8).to(torch::kBool);
    return logits.masked_fill(mask.logical_not(), -kInf);
  }
  static torch::Tensor Mask(const torch::Tensor& logits, const Observation& obs) {
    const torch::Tensor allowed =
        torch::from_blob(const_cast<uint8_t*>(obs.allowed.data()),
                         {static_cast<int64_t>(obs.allowed.size())}, torch::kUInt8)
            .to(torch::kBool);
    return logits.masked_fill(allowed.logical_not(), -kInf);
  }
  torch::nn::Linear mix{nullptr}, score{nullptr}, prior{nullptr};
};
TORCH_MODULE(DeviceScorer);

// Where a Seq2Seq is in one episode: the encoder's outputs, the decoder's state, the last device
// fed back.
struct Decoding {
  torch::Tensor enc, h, c, fed;
};

// An LSTM encoder (bidirectional or not) and an attentional LSTM decoder (content attention over
// the encoder's outputs); the device taken at each step is fed back through its features.
struct Seq2SeqImpl : torch::nn::Module {
  Seq2SeqImpl(int64_t in, int64_t width, bool bidirectional) : k(width) {
    encoder = register_module(
        "encoder", torch::nn::LSTM(torch::nn::LSTMOptions(in, k).bidirectional(bidirectional)));
    project = register_module("project", torch::nn::Linear(bidirectional ? 2 * k : k, k));
    decoder = register_module("decoder", torch::nn::LSTMCell(2 * k, k));
    attend = register_module("attend", torch::nn::Linear(k, k));
    out = register_module("out", torch::nn::Linear(2 * k, k));
    feed = register_module("feed", torch::nn::Linear(kDeviceFeatures, k));
  }
  // Encodes the sequence x [n, in]: a decoding from its start.
  Decoding Encode(const torch::Tensor& x) {
    auto [y, state] = encoder->forward(x.unsqueeze(1));
    (void)state;
    return {torch::tanh(project->forward(y.squeeze(1))), torch::zeros({1, k}), torch::zeros({1, k}),
            torch::zeros({k})};
  }
  // The decoder's output for position j of the sequence.
  torch::Tensor Step(Decoding& d, int64_t j) {
    std::tie(d.h, d.c) =
        decoder->forward(torch::cat({d.enc[j], d.fed}).unsqueeze(0), std::make_tuple(d.h, d.c));
    const torch::Tensor q = d.h.squeeze(0);
    const torch::Tensor weights = torch::softmax(d.enc.matmul(attend->forward(q)), 0);
    const torch::Tensor context = weights.matmul(d.enc);
    return torch::tanh(out->forward(torch::cat({q, context})));
  }
  // Feeds back the device taken, by its features in the step's observation.
  void Feed(Decoding& d, const Observation& obs, int32_t device) {
    const torch::Tensor row = Rows(obs.devices, kDeviceFeatures)[device];
    d.fed = torch::relu(feed->forward(row));
  }
  int64_t k;
  torch::nn::LSTM encoder{nullptr};
  torch::nn::Linear project{nullptr}, attend{nullptr}, out{nullptr}, feed{nullptr};
  torch::nn::LSTMCell decoder{nullptr};
};
TORCH_MODULE(Seq2Seq);

// What the three share: the shape, the op-type embedding (registered first), whole episodes.
class EpisodePolicy : public Policy {
 public:
  EpisodePolicy(PolicyShape shape, std::string kind) : shape_(shape), kind_(std::move(kind)) {
    types_ = register_module("types", torch::nn::Embedding(kOpTypes, kTypeWidth));
  }
  std::string kind() const override { return kind_; }
  PolicyShape shape() const override { return shape_; }
  bool whole_episode() const override { return true; }

 protected:
  PolicyShape shape_;
  std::string kind_;
  torch::nn::Embedding types_{nullptr};
};

class ColocRlPolicy : public EpisodePolicy {
 public:
  explicit ColocRlPolicy(PolicyShape shape) : EpisodePolicy(shape, "colocrl") {
    const int64_t k = shape.hidden;
    input_ = register_module("input", torch::nn::Linear(kUnitInputs, k));
    seq_ = register_module("seq", Seq2Seq(k, k, false));
    scorer_ = register_module("scorer", DeviceScorer(k));
  }
  struct State : EpisodeState {
    Decoding decoding;
  };
  std::unique_ptr<EpisodeState> Begin(const Observation& first, const UnitDag& dag, Rng*,
                                      std::vector<int32_t>*,
                                      torch::Tensor* hidden_log_prob) override {
    auto state = std::make_unique<State>();
    state->decoding = seq_->Encode(torch::relu(input_->forward(UnitInputs(first, dag, types_))));
    *hidden_log_prob = torch::zeros({});
    return state;
  }
  torch::Tensor Logits(const Observation& obs, const UnitDag&, EpisodeState* state) override {
    return scorer_->forward(seq_->Step(static_cast<State*>(state)->decoding, obs.current), obs);
  }
  void Chose(EpisodeState* state, const Observation& obs, int32_t device) override {
    seq_->Feed(static_cast<State*>(state)->decoding, obs, device);
  }

 private:
  torch::nn::Linear input_{nullptr};
  Seq2Seq seq_{nullptr};
  DeviceScorer scorer_{nullptr};
};

class HdpPolicy : public EpisodePolicy {
 public:
  explicit HdpPolicy(PolicyShape shape) : EpisodePolicy(shape, "hdp") {
    const int64_t k = shape.hidden;
    group1_ =
        register_module("group1", torch::nn::Linear(kNodeFeatures + kTypeWidth, kGrouperWidth));
    group2_ = register_module("group2", torch::nn::Linear(kGrouperWidth, shape.groups));
    input_ =
        register_module("input", torch::nn::Linear(shape.groups + kOpTypes + kNodeFeatures, k));
    seq_ = register_module("seq", Seq2Seq(k, k, true));
    scorer_ = register_module("scorer", DeviceScorer(k));
    locality_ = register_parameter("locality", torch::full({1}, 2.0f));
  }

  // The groups of the units, the groups' places in the decoder's sequence, each decoded group's
  // device (-1: not yet) and decoder output, and the group the last Logits decoded (-1: none).
  struct State : EpisodeState {
    Decoding decoding;
    std::vector<int32_t> group;   // per unit
    std::vector<int64_t> order;   // per group id: its place in the decoder's sequence
    std::vector<int32_t> device;  // per decoded group
    std::vector<torch::Tensor> output;
    int64_t decoded = -1;
  };

  std::unique_ptr<EpisodeState> Begin(const Observation& first, const UnitDag& dag, Rng* rng,
                                      std::vector<int32_t>* hidden,
                                      torch::Tensor* hidden_log_prob) override {
    auto state = std::make_unique<State>();
    std::vector<int32_t>& group = state->group;
    std::vector<int64_t>& order = state->order;
    const int64_t n = dag.num_nodes;
    const int64_t num_devices = static_cast<int64_t>(first.allowed.size());
    const int64_t groups = std::min({shape_.groups, 20 * num_devices, n});
    const torch::Tensor x = Rows(first.nodes, kNodeFeatures);
    torch::Tensor logits = group2_->forward(
        torch::relu(group1_->forward(torch::cat({x, types_->forward(Index(dag.type))}, 1))));
    if (groups < shape_.groups) {
      logits = logits.slice(1, 0, groups);
    }
    // dplace's addition: a learnt weight times the distance of a group's number from the unit's
    // place in topological order (scaled to the groups), so that the first groups are runs of
    // consecutive units (HDP's grouper starts from random groups, and training from them on 2
    // cores did not leave them in minutes).
    const torch::Tensor position = torch::arange(n, torch::kFloat32).unsqueeze(1) *
                                   (static_cast<float>(groups) / static_cast<float>(n));
    const torch::Tensor number = torch::arange(groups, torch::kFloat32).unsqueeze(0) + 0.5f;
    logits = logits - locality_ * (number - position).abs();
    const torch::Tensor logp = torch::log_softmax(logits, 1);
    if (hidden->empty()) {
      const torch::Tensor l = logits.detach();
      for (int64_t u = 0; u < n; ++u) hidden->push_back(Choose(l[u], rng));
    }
    group = *hidden;
    // The groups in order of their first unit; per group its features (no gradient: the grouper
    // learns through its log-probability, as in HDP).
    order.assign(static_cast<size_t>(groups), -1);
    int64_t used = 0;
    for (int32_t g : group) {
      if (order[static_cast<size_t>(g)] < 0) order[static_cast<size_t>(g)] = used++;
    }
    const int64_t width = shape_.groups + kOpTypes + kNodeFeatures;
    std::vector<float> f(static_cast<size_t>(used * width), 0.0f);
    auto at = [&](int64_t row, int64_t col) -> float& {
      return f[static_cast<size_t>(row * width + col)];
    };
    for (int64_t v = 0; v < n; ++v) {
      const int64_t row = order[static_cast<size_t>(group[static_cast<size_t>(v)])];
      for (int32_t i = dag.pred_offsets[static_cast<size_t>(v)];
           i < dag.pred_offsets[static_cast<size_t>(v) + 1]; ++i) {
        const int32_t u = dag.preds[static_cast<size_t>(i)];
        at(order[static_cast<size_t>(group[static_cast<size_t>(u)])],
           group[static_cast<size_t>(v)]) += 1;
        at(row, group[static_cast<size_t>(u)]) += 1;
      }
      at(row, shape_.groups + dag.type[static_cast<size_t>(v)]) += 1;
      for (int64_t j = 0; j < kNodeFeatures; ++j) {
        at(row, shape_.groups + kOpTypes + j) +=
            first.nodes[static_cast<size_t>(v * kNodeFeatures + j)];
      }
    }
    for (int64_t r = 0; r < used; ++r) {  // row-normalised
      float total = 0;
      for (int64_t c = 0; c < width; ++c) total += std::abs(at(r, c));
      if (total > 0) {
        for (int64_t c = 0; c < width; ++c) at(r, c) /= total;
      }
    }
    const torch::Tensor groups_in =
        torch::from_blob(f.data(), {used, width}, torch::kFloat32).clone() * static_cast<float>(8);
    state->decoding = seq_->Encode(torch::relu(input_->forward(groups_in)));
    state->device.assign(static_cast<size_t>(used), -1);
    state->output.assign(static_cast<size_t>(used), torch::Tensor());
    const torch::Tensor chosen = Index(group).unsqueeze(1);
    *hidden_log_prob = logp.gather(1, chosen).sum();
    return state;
  }

  torch::Tensor Logits(const Observation& obs, const UnitDag&, EpisodeState* episode) override {
    State& s = *static_cast<State*>(episode);
    const auto j = static_cast<size_t>(
        s.order[static_cast<size_t>(s.group[static_cast<size_t>(obs.current)])]);
    s.decoded = -1;
    const int32_t d = s.device[j];
    if (d >= 0 && obs.allowed[static_cast<size_t>(d)]) {  // where its group went
      torch::Tensor forced = torch::full({static_cast<int64_t>(obs.allowed.size())}, -kInf);
      forced[d] = 0;
      return forced;
    }
    if (d < 0) {  // the group's first unit: the decoder's next step
      s.output[j] = seq_->Step(s.decoding, static_cast<int64_t>(j));
      s.decoded = static_cast<int64_t>(j);
    }
    return scorer_->forward(s.output[j], obs);
  }
  void Chose(EpisodeState* episode, const Observation& obs, int32_t device) override {
    State& s = *static_cast<State*>(episode);
    if (s.decoded < 0) return;
    s.device[static_cast<size_t>(s.decoded)] = device;
    seq_->Feed(s.decoding, obs, device);
  }

 private:
  torch::nn::Linear group1_{nullptr}, group2_{nullptr}, input_{nullptr};
  torch::Tensor locality_;
  Seq2Seq seq_{nullptr};
  DeviceScorer scorer_{nullptr};
};

class GdpPolicy : public EpisodePolicy {
 public:
  explicit GdpPolicy(PolicyShape shape) : EpisodePolicy(shape, "gdp") {
    const int64_t k = shape.hidden;
    input_ = register_module("input", torch::nn::Linear(kNodeFeatures + kTypeWidth, k));
    for (int layer = 0; layer < 2; ++layer) {
      self_.push_back(register_module("self" + std::to_string(layer), torch::nn::Linear(k, k)));
      neighbours_.push_back(
          register_module("neighbours" + std::to_string(layer), torch::nn::Linear(k, k)));
    }
    const int64_t heads = k % kHeads == 0 ? kHeads : 1;
    attention_ = register_module(
        "attention", torch::nn::MultiheadAttention(torch::nn::MultiheadAttentionOptions(k, heads)));
    norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({k})));
    norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({k})));
    ff1_ = register_module("ff1", torch::nn::Linear(k, 2 * k));
    ff2_ = register_module("ff2", torch::nn::Linear(2 * k, k));
    scale_ = register_module("superposition_scale", torch::nn::Linear(k, k));
    shift_ = register_module("superposition_shift", torch::nn::Linear(k, k));
    scorer_ = register_module("scorer", DeviceScorer(k));
  }

  // The units' representations, each scored against the devices at its step.
  struct State : EpisodeState {
    torch::Tensor z;
  };

  std::unique_ptr<EpisodeState> Begin(const Observation& first, const UnitDag& dag, Rng*,
                                      std::vector<int32_t>*,
                                      torch::Tensor* hidden_log_prob) override {
    const torch::Tensor x = Rows(first.nodes, kNodeFeatures);
    torch::Tensor h =
        torch::relu(input_->forward(torch::cat({x, types_->forward(Index(dag.type))}, 1)));
    // Both directions: a unit's neighbours are its inputs' and its outputs' units.
    std::vector<int32_t> offsets = {0}, edges;
    for (size_t v = 0; v + 1 < dag.pred_offsets.size(); ++v) {
      edges.insert(edges.end(), dag.preds.begin() + dag.pred_offsets[v],
                   dag.preds.begin() + dag.pred_offsets[v + 1]);
      edges.insert(edges.end(), dag.succs.begin() + dag.succ_offsets[v],
                   dag.succs.begin() + dag.succ_offsets[v + 1]);
      offsets.push_back(static_cast<int32_t>(edges.size()));
    }
    for (size_t layer = 0; layer < self_.size(); ++layer) {
      h = torch::relu(self_[layer]->forward(h) +
                      neighbours_[layer]->forward(NeighbourMean(h, offsets, edges)));
    }
    const int64_t n = h.size(0);
    std::vector<torch::Tensor> segments;
    torch::Tensor memory;
    for (int64_t s = 0; s < n; s += kSegment) {
      const torch::Tensor q = h.slice(0, s, std::min(n, s + kSegment)).unsqueeze(1);
      const torch::Tensor kv = memory.defined() ? torch::cat({memory, q}) : q;
      const torch::Tensor a = std::get<0>(attention_->forward(q, kv, kv));
      torch::Tensor z = norm1_->forward(q + a);
      z = norm2_->forward(z + ff2_->forward(torch::relu(ff1_->forward(z))));
      memory = z.detach();
      segments.push_back(z.squeeze(1));
    }
    const torch::Tensor zs = torch::cat(segments);
    const torch::Tensor graph = h.mean(0);
    auto state = std::make_unique<State>();
    state->z = zs * (1 + torch::tanh(scale_->forward(graph))) + shift_->forward(graph);
    *hidden_log_prob = torch::zeros({});
    return state;
  }
  torch::Tensor Logits(const Observation& obs, const UnitDag&, EpisodeState* state) override {
    return scorer_->forward(static_cast<State*>(state)->z[obs.current], obs);
  }
  // One pass for every step: the decisions do not feed back into the representation.
  torch::Tensor EpisodeLogits(const std::vector<Observation>& observations,
                              const std::vector<int32_t>&, const UnitDag& dag,
                              std::vector<int32_t>* hidden,
                              torch::Tensor* hidden_log_prob) override {
    const std::unique_ptr<EpisodeState> state =
        Begin(observations.front(), dag, nullptr, hidden, hidden_log_prob);
    std::vector<int64_t> current;
    for (const Observation& o : observations) current.push_back(o.current);
    return scorer_->forward(
        static_cast<State*>(state.get())->z.index_select(0, torch::tensor(current, torch::kInt64)),
        observations);
  }

 private:
  torch::nn::Linear input_{nullptr}, ff1_{nullptr}, ff2_{nullptr}, scale_{nullptr}, shift_{nullptr};
  std::vector<torch::nn::Linear> self_, neighbours_;
  torch::nn::MultiheadAttention attention_{nullptr};
  torch::nn::LayerNorm norm1_{nullptr}, norm2_{nullptr};
  DeviceScorer scorer_{nullptr};
};

}  // namespace

std::shared_ptr<Policy> MakeColocRlPolicy(PolicyShape shape) {
  return std::make_shared<ColocRlPolicy>(shape);
}
std::shared_ptr<Policy> MakeHdpPolicy(PolicyShape shape) {
  return std::make_shared<HdpPolicy>(shape);
}
std::shared_ptr<Policy> MakeGdpPolicy(PolicyShape shape) {
  return std::make_shared<GdpPolicy>(shape);
}

}  // namespace dplace::learn
