// The one rollout loop and the one policy-gradient update (rollout.h), shared by training
// (train.cc) and the learned placers' fine-tuning (placeto_placer.cc).
#include "dplace/learn/rollout.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dplace::learn {

int32_t Choose(const torch::Tensor& logits, Rng* rng) {
  const torch::Tensor l = logits.to(torch::kFloat64).contiguous();
  const double* v = l.data_ptr<double>();
  const int64_t n = l.size(0);
  int32_t best = -1;
  for (int32_t d = 0; d < n; ++d) {
    if (std::isfinite(v[d]) && (best < 0 || v[d] > v[best])) best = d;
  }
  if (rng == nullptr || best < 0) return std::max(best, 0);
  double total = 0;
  for (int32_t d = 0; d < n; ++d) total += std::isfinite(v[d]) ? std::exp(v[d] - v[best]) : 0;
  double u = rng->Uniform() * total;
  for (int32_t d = 0; d < n; ++d) {
    if (!std::isfinite(v[d])) continue;
    u -= std::exp(v[d] - v[best]);
    if (u < 0) return d;
  }
  return best;
}

Episode Play(PlacementEnv& env, Policy& policy, const sim::Placement& start, Actor actor, bool keep,
             const std::function<bool()>& out) {
  torch::NoGradGuard no_grad;
  Episode e;
  env.Reset(start);
  e.start_cost = env.cost();
  e.best_cost = env.cost();
  Observation obs;
  std::unique_ptr<EpisodeState> state;
  while (!env.Done() && !(out && out())) {
    // A whole-episode policy reads the graph at its first step only.
    env.Observe(&obs, policy.whole_episode() && !e.actions.empty() ? PlacementEnv::View::kDevices
                                                                   : PlacementEnv::View::kAll);
    const place::UnitId u = env.Current();
    const bool ask = !actor.stay || actor.score;
    torch::Tensor logits;
    if (ask) {
      if (e.actions.empty()) {
        torch::Tensor hidden_log_prob;
        state = policy.Begin(obs, env.dag(), actor.rng, &e.hidden, &hidden_log_prob);
        e.hidden_log_prob = hidden_log_prob.item<double>();
      }
      logits = policy.Logits(obs, env.dag(), state.get());
    }
    const int32_t a = actor.stay ? env.placement()[env.units()[u].ops.front()].value()
                                 : Choose(logits, actor.rng);
    if (ask) {
      policy.Chose(state.get(), obs, a);
      if (keep) e.log_probs.push_back(torch::log_softmax(logits, 0)[a].item<double>());
      if (actor.score) e.logits.push_back(logits);
    }
    e.units.push_back(u);
    e.actions.push_back(a);
    e.rewards.push_back(env.Step(sim::DeviceId(a)));
    e.best_cost = std::min(e.best_cost, env.cost());
    if (keep) e.observations.push_back(std::move(obs));
  }
  e.end_cost = env.cost();
  return e;
}

StatusOr<AlgorithmOptions> AlgorithmByName(const std::string& name, AlgorithmOptions base) {
  if (name == "reinforce") {
    base.clip = 0;
    base.epochs = 1;
  } else if (name == "ppo") {
    if (base.clip <= 0) base.clip = 0.2;
    if (base.epochs <= 1) base.epochs = 4;
  } else {
    return InvalidInput("--algorithm: '" + name + "' is not reinforce or ppo");
  }
  if (base.clip < 0 || base.clip >= 1) return InvalidInput("--clip: must lie in [0, 1)");
  if (base.epochs < 1) return InvalidInput("--epochs: must be at least 1");
  return base;
}

std::vector<double> PolicyGradient::Returns(const Episode& episode) const {
  std::vector<double> g(episode.rewards.size());
  double sum = 0;
  for (size_t t = g.size(); t-- > 0;) {
    sum = episode.rewards[t] + options_.discount * sum;
    g[t] = sum;
  }
  return g;
}

std::vector<double> PolicyGradient::Advantages(const Episode& episode) const {
  const std::vector<double> g = Returns(episode);
  const auto it = history_.find(episode.problem);
  std::vector<double> advantage(episode.actions.size());
  double square = 0;
  for (size_t t = 0; t < advantage.size(); ++t) {
    double baseline = 0;
    if (it != history_.end()) {
      int count = 0;
      for (const std::vector<double>& past : it->second) {
        if (t < past.size()) {
          baseline += past[t];
          ++count;
        }
      }
      if (count > 0) baseline /= count;
    }
    advantage[t] = g[t] - baseline;
    square += advantage[t] * advantage[t];
  }
  double rms = std::sqrt(square / std::max<size_t>(1, advantage.size()));
  if (options_.problem_scale && it != history_.end() && it->second.size() >= 2) {
    double mean = 0, spread = 0;
    for (const std::vector<double>& past : it->second) mean += past.empty() ? 0 : past[0];
    mean /= static_cast<double>(it->second.size());
    for (const std::vector<double>& past : it->second) {
      const double d = (past.empty() ? 0 : past[0]) - mean;
      spread += d * d;
    }
    // At least 0.01 (1% of the lower bound): returns that differ by less are noise, and scaling
    // them to unit size drove GDP's pre-training, after 1,700 updates of returns near 0, to
    // returns of -4 to -6.
    rms = std::max(std::sqrt(spread / static_cast<double>(it->second.size())), 0.01);
  }
  for (double& a : advantage) a = rms > 1e-9 ? a / rms : 0;
  return advantage;
}

torch::Tensor Loss::Gradient(Policy& policy, const UnitDag& dag, const Episode& episode,
                             double* value, double* fit) const {
  policy.zero_grad();
  const torch::Tensor loss = Of(policy, dag, episode, fit);
  if (value != nullptr) *value = loss.defined() ? loss.item<double>() : 0;
  if (!loss.defined()) return FlatGradients(policy);
  loss.backward();
  torch::Tensor flat = FlatGradients(policy);
  policy.zero_grad();
  return flat;
}

torch::Tensor PolicyGradient::Of(Policy& policy, const UnitDag& dag, const Episode& episode,
                                 double* /*fit*/) const {
  if (episode.actions.empty()) return {};
  const std::vector<double> advantage = Advantages(episode);
  const double clip = options_.clip;
  const auto steps = static_cast<int64_t>(episode.actions.size());
  std::vector<int32_t> hidden = episode.hidden;
  torch::Tensor hidden_log_prob;
  const torch::Tensor logp = torch::log_softmax(
      policy.EpisodeLogits(episode.observations, episode.actions, dag, &hidden, &hidden_log_prob),
      1);
  const torch::Tensor finite = logp.masked_fill(torch::isinf(logp), 0);
  const torch::Tensor entropy = -(logp.exp() * finite).sum();
  const torch::Tensor actions = torch::tensor(
      std::vector<int64_t>(episode.actions.begin(), episode.actions.end()), torch::kInt64);
  // The hidden choices count as one more action with the first step's advantage.
  torch::Tensor chosen = logp.gather(1, actions.unsqueeze(1)).squeeze(1);
  std::vector<double> a = advantage, old = clip > 0 ? episode.log_probs : std::vector<double>();
  if (!hidden.empty()) {
    chosen = torch::cat({chosen, hidden_log_prob.reshape({1}).to(chosen.dtype())});
    a.push_back(advantage[0]);
    if (clip > 0) old.push_back(episode.hidden_log_prob);
  }
  const torch::Tensor at = torch::tensor(a, torch::kFloat64).to(chosen.dtype());
  torch::Tensor gain;
  if (clip > 0) {
    const torch::Tensor ratio =
        torch::exp(chosen - torch::tensor(old, torch::kFloat64).to(chosen.dtype()));
    gain = torch::min(ratio * at, torch::clamp(ratio, 1 - clip, 1 + clip) * at);
  } else {
    gain = at * chosen;
  }
  return -(gain.sum() + options_.entropy * entropy) / static_cast<double>(steps);
}

torch::Tensor ImitationLoss::Of(Policy& policy, const UnitDag& dag, const Episode& e,
                                double* fit) const {
  if (e.actions.empty()) return {};
  std::vector<int32_t> hidden;
  torch::Tensor hidden_log_prob;
  const torch::Tensor logp = torch::log_softmax(
      policy.EpisodeLogits(e.observations, e.actions, dag, &hidden, &hidden_log_prob), 1);
  const torch::Tensor labels =
      torch::tensor(std::vector<int64_t>(e.targets.begin(), e.targets.end()), torch::kInt64);
  const torch::Tensor here =
      torch::tensor(std::vector<int64_t>(e.actions.begin(), e.actions.end()), torch::kInt64);
  const torch::Tensor moved = here.ne(labels);
  const torch::Tensor each = torch::nll_loss(logp, labels, {}, torch::Reduction::None);
  torch::Tensor loss = each.mean();
  torch::Tensor scored = torch::ones_like(moved);  // the units the fit counts
  if (e.label_is_move) {
    if (moved.any().item<bool>()) {
      // ln Σ_v (1 − π_v(where v is)): the log-sum of every probability but the stays'.
      const torch::Tensor away =
          logp.masked_fill(torch::one_hot(here, logp.size(1)).to(torch::kBool),
                           -std::numeric_limits<double>::infinity())
              .flatten()
              .logsumexp(0);
      loss = each.masked_select(moved).mean() + away;
      scored = moved;
    }
  } else if (moved.any().item<bool>()) {
    loss = 0.5 * loss + 0.5 * each.masked_select(moved).mean();
  }
  if (fit != nullptr) {
    torch::NoGradGuard no_grad;
    *fit = logp.argmax(1).eq(labels).masked_select(scored).to(torch::kDouble).mean().item<double>();
  }
  return loss;
}

Learner::Learner(Policy& policy, double lr, double max_grad_norm)
    : policy_(policy),
      adam_(policy.parameters(), torch::optim::AdamOptions(lr)),
      max_grad_norm_(max_grad_norm) {}

void Learner::SetLearningRate(double lr) {
  for (auto& group : adam_.param_groups()) {
    static_cast<torch::optim::AdamOptions&>(group.options()).lr(lr);
  }
}

bool Learner::Update(Loss& loss, const std::vector<Episode>& batch, const std::vector<int>& own,
                     const std::function<const UnitDag&(int problem)>& dag_of,
                     const MeanGradient& mean, const std::function<bool()>& stop,
                     std::vector<std::tuple<int, double, double>>* values) {
  const bool record_first = loss.record_first(policy_);
  if (record_first) {
    for (const Episode& e : batch) loss.Record(e);
  }
  const auto size = static_cast<int>(batch.size());
  for (int epoch = 0; epoch < loss.epochs(); ++epoch) {
    std::vector<std::pair<int, torch::Tensor>> gradients;
    if (values != nullptr) values->clear();
    for (int s : own) {
      if (stop && stop()) return false;  // a wide policy's gradients take long: no step then
      const Episode& e = batch[static_cast<size_t>(s)];
      double value = 0, fit = 0;
      gradients.emplace_back(s, loss.Gradient(policy_, dag_of(e.problem), e, &value, &fit));
      if (values != nullptr) values->emplace_back(s, value, fit);
    }
    if (stop && stop()) return false;
    torch::Tensor total;
    if (mean) {
      total = mean(gradients, size);
    } else {
      for (const auto& [s, g] : gradients) total = total.defined() ? total + g : g;
      total = total / size;
    }
    SetGradients(policy_, total);
    if (max_grad_norm_ > 0) torch::nn::utils::clip_grad_norm_(policy_.parameters(), max_grad_norm_);
    adam_.step();
  }
  if (!record_first) {
    for (const Episode& e : batch) loss.Record(e);
  }
  return true;
}

void PolicyGradient::Record(const Episode& episode) {
  auto& h = history_[episode.problem];
  h.push_back(Returns(episode));
  while (static_cast<int>(h.size()) > options_.baseline_window) h.pop_front();
}

void PolicyGradient::Save(torch::serialize::OutputArchive* archive) const {
  std::vector<double> flat;  // problem, episodes, then per episode: length, returns
  for (const auto& [problem, episodes] : history_) {
    flat.push_back(problem);
    flat.push_back(static_cast<double>(episodes.size()));
    for (const std::vector<double>& e : episodes) {
      flat.push_back(static_cast<double>(e.size()));
      flat.insert(flat.end(), e.begin(), e.end());
    }
  }
  archive->write("baselines", torch::tensor(flat, torch::kFloat64));
}

void PolicyGradient::Load(torch::serialize::InputArchive& archive) {
  torch::Tensor t;
  archive.read("baselines", t);
  const std::vector<double> flat(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
  history_.clear();
  for (size_t i = 0; i < flat.size();) {
    auto& h = history_[static_cast<int>(flat[i])];
    const auto episodes = static_cast<size_t>(flat[i + 1]);
    i += 2;
    for (size_t e = 0; e < episodes; ++e) {
      const auto length = static_cast<size_t>(flat[i]);
      h.emplace_back(flat.begin() + static_cast<std::ptrdiff_t>(i + 1),
                     flat.begin() + static_cast<std::ptrdiff_t>(i + 1 + length));
      i += 1 + length;
    }
  }
}

EnvOptions EpisodeOptions(const Policy& policy) {
  if (!policy.whole_episode()) return {};
  return {.refresh_every = std::numeric_limits<int>::max(), .reuse_start = true};
}

AlgorithmOptions AlgorithmFor(const Policy& policy, AlgorithmOptions options) {
  if (policy.whole_episode()) {
    options.discount = 1;
    options.problem_scale = true;
  }
  return options;
}

}  // namespace dplace::learn
