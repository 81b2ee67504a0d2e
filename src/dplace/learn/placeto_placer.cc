#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>

#include "dplace/learn/placeto.h"
#include "dplace/learn/rollout.h"
#include "dplace/place/budget.h"

namespace dplace::learn {

void ReadOptions(place::OptionReader& r, PlacetoOptions* o) {
  r.Read("policy", &o->policy, "policy file (dplace train --out); default: the bundled one");
  r.Read("fine_tune", &o->fine_tune, "train the policy on the problem between episodes");
  r.Read("max_units", &o->max_units, 8, 100000,
         "coarsen problems of more co-location units than this");
  r.Read("refresh", &o->refresh, 0, 100000,
         "steps between evaluations in an episode (0: about 16 evaluations per episode)");
  r.Read("episodes", &o->episodes, 0, 1000000, "at most this many episodes (0: the budget's)");
  r.ReadChoice("start", &o->start, {"search", "fastest"},
               "where episodes begin without a given start: search (where the searches start, "
               "within a quarter of the budget) or fastest (each unit on its fastest device)");
}

std::string DefaultPolicyPath(const std::string& method) {
  return DPLACE_POLICY_DIR "/" + method + ".pt";
}

void ReadOptions(place::OptionReader& r, EpisodePlacerOptions* o) {
  // The method's defaults (methods.h).
  const Method& m = *FindMethod(o->method);
  o->hidden = m.defaults.hidden;
  o->lr = m.defaults.lr;
  o->max_grad_norm = m.defaults.max_grad_norm;
  o->algorithm = m.defaults.algorithm;
  r.Read("policy", &o->policy,
         m.bundled
             ? "policy file (dplace train --method " + o->method + "); default: the bundled one"
             : "policy file to start from (dplace train); default: fresh weights");
  if (m.bundled) r.Read("fine_tune", &o->fine_tune, "train the policy on the problem");
  r.Read("hidden", &o->hidden, 1, 1024, "width of a fresh policy");
  if (m.groups) r.Read("groups", &o->groups, 0, 4096, "the grouper's most groups (0: 256)");
  r.Read("samples", &o->samples, 1, 1024, "episodes per update");
  r.Read("lr", &o->lr, 1e-8, 10, "Adam's learning rate");
  r.Read("max_grad_norm", &o->max_grad_norm, 0, 1e6,
         "clip the gradient's norm to this (0: no clipping)");
  r.ReadChoice("algorithm", &o->algorithm, {"reinforce", "ppo"}, "the policy-gradient algorithm");
  r.Read("clip", &o->clip, 0, 0.99, "ppo's clip range of the ratio");
  r.Read("epochs", &o->epochs, 1, 100, "ppo's gradient steps per update");
  r.Read("entropy", &o->entropy, 0, 10, "weight of the entropy bonus");
  r.Read("max_units", &o->max_units, 8, 100000,
         "coarsen problems of more co-location units than this");
  r.ReadChoice("start", &o->start, {"search", "fastest"},
               "where episodes begin without a given start: search (where the searches start, "
               "within a quarter of the budget) or fastest (each unit on its fastest device)");
}

namespace {

// Policies read once per file and process: placing many problems reads the file once.
StatusOr<std::shared_ptr<Policy>> CachedPolicy(const std::string& path) {
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<Policy>> cache;
  const std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(path);
  if (it != cache.end()) return it->second;
  DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<Policy> policy, LoadPolicy(path));
  cache.emplace(path, policy);
  return policy;
}

// Where episodes begin: the request's start, else the searches' start found by `finder` within
// `limits` (the start takes at most a quarter of them), else each unit on its fastest device.
sim::Placement EpisodeStart(const sim::Problem& problem, const place::PlaceRequest& request,
                            place::StartFinder* finder, const place::Limits& limits,
                            const place::Units& units) {
  if (const sim::Placement* given = place::StartOf(problem, request)) return *given;
  sim::Placement from;
  if (finder != nullptr) {
    from = finder
               ->Find(problem,
                      {.evaluator = request.evaluator, .seed = request.seed, .limits = limits})
               .placement;
  }
  return from.empty() ? FastestStart(problem, units) : from;
}

// A private copy of a cached policy, to train (an episode's state is the episode's: playing needs
// no copy).
StatusOr<std::shared_ptr<Policy>> CopyPolicy(Policy& policy, const std::string& path) {
  torch::serialize::OutputArchive out;
  WritePolicy(policy, &out);
  std::ostringstream bytes;
  out.save_to(bytes);
  torch::serialize::InputArchive in;
  std::istringstream read(bytes.str());
  in.load_from(read);
  return ReadPolicy(in, path);
}

// A policy's distributions over every unit's devices (placeto.h PolicyProposal).
class PolicyProposalModel : public place::LearnedProposal {
 public:
  PolicyProposalModel(std::shared_ptr<Policy> policy, const sim::Problem& problem,
                      const place::Units& units, sim::Evaluator& evaluator)
      : policy_(std::move(policy)), env_(problem, evaluator, units) {}

  Status Score(const sim::Placement& placement, std::vector<double>* probabilities,
               const std::function<bool()>& stop) override {
    const TorchTurn turn;
    const auto devices = static_cast<size_t>(env_.num_devices());
    // Every unit stays where it is: each step sees the placement as it is.
    const Episode e = Play(env_, *policy_, placement, Actor::StayAndScore(), false, stop);
    if (e.units.size() < env_.units().size()) {  // the search's time is spent: cut
      probabilities->clear();
      return OkStatus();
    }
    probabilities->assign(env_.units().size() * devices, 0.0);
    for (size_t t = 0; t < e.units.size(); ++t) {
      const torch::Tensor p = torch::softmax(e.logits[t], 0).to(torch::kDouble);
      const size_t row = static_cast<size_t>(e.units[t].value()) * devices;
      for (size_t d = 0; d < devices; ++d)
        (*probabilities)[row + d] = p[static_cast<int64_t>(d)].item<double>();
    }
    for (double p : *probabilities) {
      if (!std::isfinite(p))
        return InvalidInput("the proposal's policy gives non-finite probabilities");
    }
    return OkStatus();
  }

 private:
  std::shared_ptr<Policy> policy_;
  PlacementEnv env_;
};

}  // namespace

StatusOr<place::LearnedProposalFactory> PolicyProposal(const std::string& name) {
  const Method* method = FindMethod(name);
  const std::string path = method != nullptr && method->bundled ? DefaultPolicyPath(name) : name;
  if (method != nullptr && !method->bundled) {
    return InvalidInput(
        name + " has no bundled policy: give a policy file (dplace train --method " + name + ")");
  }
  std::shared_ptr<Policy> shared;
  {
    const TorchTurn turn;
    DPLACE_ASSIGN_OR_RETURN(shared, CachedPolicy(path));
  }
  return place::LearnedProposalFactory(
      [shared, path](
          const sim::Problem& problem, const place::Units& units,
          sim::Evaluator& evaluator) -> StatusOr<std::unique_ptr<place::LearnedProposal>> {
        // Every chain plays the one policy: an episode's state is its own (policy.h).
        return std::unique_ptr<place::LearnedProposal>(
            std::make_unique<PolicyProposalModel>(shared, problem, units, evaluator));
      });
}

namespace {

class PlacetoPlacer : public place::Placer {
 public:
  PlacetoPlacer(PlacetoOptions o, std::shared_ptr<place::StartFinder> start)
      : o_(std::move(o)), start_(std::move(start)) {}
  std::string_view name() const override { return "placeto"; }

 private:
  StatusOr<place::PlaceResult> PlaceImpl(const sim::Problem& problem,
                                         const place::PlaceRequest& request) override {
    const TorchTurn turn;
    const std::string path = o_.policy.empty() ? DefaultPolicyPath() : o_.policy;
    DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<Policy> shared, CachedPolicy(path));
    if (shared->kind() != "placeto") {
      return InvalidInput(path + ": a " + shared->kind() + " policy, not placeto");
    }
    std::shared_ptr<Policy> policy = shared;
    if (o_.fine_tune) {  // a private copy to train
      DPLACE_ASSIGN_OR_RETURN(policy, CopyPolicy(*shared, path));
    }
    const place::Budget budget(request.limits, *request.evaluator, kPlacetoEvaluations);
    bool coarsened = false;
    auto units = PolicyUnits(problem, o_.max_units, &coarsened);
    if (!units.ok()) return units.status();
    const int num_units = static_cast<int>(units->size());
    const int refresh = o_.refresh > 0 ? o_.refresh : std::max(1, (num_units + 15) / 16);
    PlacementEnv env(problem, *request.evaluator, *std::move(units),
                     {.refresh_every = o_.fine_tune ? 1 : refresh});
    std::optional<Learner> learner;  // REINFORCE, one episode an update
    PolicyGradient reinforce(AlgorithmFor(*policy, AlgorithmOptions{}));
    if (o_.fine_tune) learner.emplace(*policy, 1e-4);

    Rng rng(request.seed);
    // Episodes improve a placement of every op.
    sim::Placement from =
        EpisodeStart(problem, request, o_.start == "search" ? start_.get() : nullptr,
                     budget.limits(), env.units());
    int episodes = 0;
    // The most evaluations one episode makes (its start, its refreshes and its last step) and the
    // longest one took: an episode begins only when the budget has that much left, 1.5 times that
    // time (episodes vary), so that placeto ends within the time limit rather than after it. The
    // first always begins.
    const int every = o_.fine_tune ? 1 : refresh;
    const int64_t per_episode = 2 + (num_units + every - 1) / every;
    double longest_s = 0;
    // An episode over many units may outlast the limit on its own: it ends where the time does.
    const std::function<bool()> past_time = [&] { return budget.OutOfTime(); };
    while (episodes == 0 ||
           (!budget.Out() && (o_.episodes == 0 || episodes < o_.episodes) &&
            (budget.limits().evaluations == 0 || budget.Remaining().evaluations >= per_episode) &&
            (budget.limits().seconds == 0 || budget.Remaining().seconds >= 1.5 * longest_s))) {
      const double began = budget.Elapsed();
      Episode e = Play(env, *policy, from, episodes == 0 ? Actor::Greedy() : Actor::Sample(&rng),
                       o_.fine_tune, past_time);
      ++episodes;
      if (learner && !e.actions.empty()) {
        learner->Update(reinforce, {std::move(e)}, {0},
                        [&](int) -> const UnitDag& { return env.dag(); });
      }
      longest_s = std::max(longest_s, budget.Elapsed() - began);
      from = env.best();
    }
    place::PlaceResult out{.placement = env.best()};
    std::ostringstream note;
    note << episodes << (episodes == 1 ? " episode of " : " episodes of ")
         << (o_.policy.empty() ? std::string("the bundled policy") : "policy " + path)
         << (o_.fine_tune ? ", fine-tuned" : "");
    if (coarsened) {
      note << "; coarsened to " << num_units << " units of " << problem.num_ops() << " ops";
    }
    out.note = note.str();
    return out;
  }

  PlacetoOptions o_;
  std::shared_ptr<place::StartFinder> start_;
};

}  // namespace

// The placer of a whole-episode policy (placeto.h).
class EpisodePlacer : public place::Placer {
 public:
  EpisodePlacer(EpisodePlacerOptions o, std::shared_ptr<place::StartFinder> start)
      : o_(std::move(o)), start_(std::move(start)) {}
  std::string_view name() const override { return o_.method; }

 private:
  StatusOr<place::PlaceResult> PlaceImpl(const sim::Problem& problem,
                                         const place::PlaceRequest& request) override {
    const TorchTurn turn;
    std::string path = o_.policy;
    const bool bundled = FindMethod(o_.method)->bundled;
    if (path.empty() && bundled) path = DefaultPolicyPath(o_.method);
    const bool train = !bundled || o_.fine_tune || path.empty();
    std::shared_ptr<Policy> policy;
    if (!path.empty()) {
      DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<Policy> shared, CachedPolicy(path));
      if (shared->kind() != o_.method) {
        return InvalidInput(path + ": a " + shared->kind() + " policy, not " + o_.method);
      }
      policy = shared;
      if (train) {  // a private copy to train
        DPLACE_ASSIGN_OR_RETURN(policy, CopyPolicy(*shared, path));
      }
    } else {
      DPLACE_ASSIGN_OR_RETURN(
          policy, MakePolicy(o_.method, {.hidden = o_.hidden, .groups = o_.groups}, request.seed));
    }

    const bool unlimited = request.limits.evaluations <= 0 && request.limits.seconds <= 0;
    const place::Budget budget(
        request.limits, *request.evaluator,
        !train      ? kPlacetoEvaluations
        : unlimited ? EpisodeEvaluations(std::min<int64_t>(
                          static_cast<int64_t>(place::MakeUnits(problem).size()), o_.max_units))
                    : 0);
    bool coarsened = false;
    DPLACE_ASSIGN_OR_RETURN(place::Units units, PolicyUnits(problem, o_.max_units, &coarsened));
    const int num_units = static_cast<int>(units.size());
    PlacementEnv env(problem, *request.evaluator, std::move(units), EpisodeOptions(*policy));
    AlgorithmOptions a{.entropy = o_.entropy, .clip = o_.clip, .epochs = o_.epochs};
    DPLACE_ASSIGN_OR_RETURN(a, AlgorithmByName(o_.algorithm, a));
    PolicyGradient algorithm(AlgorithmFor(*policy, a));
    Learner learner(*policy, o_.lr, o_.max_grad_norm);
    const sim::Placement from =
        EpisodeStart(problem, request, o_.start == "search" ? start_.get() : nullptr,
                     budget.limits(), env.units());
    Rng rng(request.seed);
    int64_t episodes = 0, updates = 0;
    const int64_t made_before = request.evaluator->evaluations();
    // A greedy episode first: a trained policy's own placement.
    const double greedy_began = budget.Elapsed();
    // An episode over many units may outlast the limit on its own: it ends where the time does.
    const std::function<bool()> past_time = [&] { return budget.OutOfTime(); };
    Play(env, *policy, from, Actor::Greedy(), false, past_time);
    ++episodes;
    // The longest update so far (the next begins only with 1.5 times that left), before the first
    // estimated from the greedy episode — `samples` episodes, and per epoch a forward and a
    // backward pass over each — and from one pass over every weight, of which each gradient and
    // Adam's step (its first allocates its state) make several: a wide policy's update is mostly
    // these.
    const int epochs = train ? algorithm.epochs() : 0;
    double longest_s = (budget.Elapsed() - greedy_began) * o_.samples * (1 + 2 * epochs);
    if (train) {
      const double pass_began = budget.Elapsed();
      FlatGradients(*policy);
      longest_s += (budget.Elapsed() - pass_began) * (2.0 * o_.samples + 8) * epochs;
    }
    // An episode that leaves every unit where it was evaluates nothing; each counts as at least
    // one evaluation against an evaluation limit, so that such episodes cannot go on for ever.
    auto used = [&] { return std::max(request.evaluator->evaluations() - made_before, episodes); };
    while (
        !budget.Out() &&
        (budget.limits().evaluations == 0 || budget.limits().evaluations - used() >= o_.samples) &&
        (budget.limits().seconds == 0 || budget.Remaining().seconds >= 1.5 * longest_s)) {
      const double began = budget.Elapsed();
      std::vector<Episode> batch;
      for (int k = 0; k < o_.samples && !past_time(); ++k) {
        batch.push_back(Play(env, *policy, from, Actor::Sample(&rng), train, past_time));
        ++episodes;
      }
      // The time ran out within the batch (an update may take longer than the last): no update.
      if (past_time()) break;
      if (train) {
        std::vector<int> all(batch.size());
        std::iota(all.begin(), all.end(), 0);
        learner.Update(
            algorithm, batch, all, [&](int) -> const UnitDag& { return env.dag(); }, {}, past_time);
        ++updates;
      }
      longest_s = std::max(longest_s, budget.Elapsed() - began);
    }
    place::PlaceResult out{.placement = env.best()};
    std::ostringstream note;
    note << episodes << " episodes";
    if (train) note << ", " << updates << " updates";
    note << " of "
         << (path.empty()        ? std::string("a fresh policy")
             : o_.policy.empty() ? std::string("the bundled policy")
                                 : "policy " + path);
    if (coarsened) {
      note << "; coarsened to " << num_units << " units of " << problem.num_ops() << " ops";
    }
    out.note = note.str();
    return out;
  }

  EpisodePlacerOptions o_;
  std::shared_ptr<place::StartFinder> start_;
};

std::unique_ptr<place::Placer> MakeEpisodePlacer(EpisodePlacerOptions options,
                                                 std::shared_ptr<place::StartFinder> start) {
  return std::make_unique<EpisodePlacer>(std::move(options), std::move(start));
}

std::unique_ptr<place::Placer> MakePlacetoPlacer(PlacetoOptions options,
                                                 std::shared_ptr<place::StartFinder> start) {
  return std::make_unique<PlacetoPlacer>(std::move(options), std::move(start));
}

struct EmbeddingTimer::Impl {
  std::shared_ptr<const sim::Problem> problem;
  std::unique_ptr<sim::Evaluator> evaluator;
  std::unique_ptr<PlacementEnv> env;
  std::shared_ptr<Policy> policy;
  Observation obs;
};

EmbeddingTimer::EmbeddingTimer(std::shared_ptr<const sim::Problem> problem, int hidden)
    : impl_(std::make_unique<Impl>()) {
  impl_->problem = std::move(problem);
  impl_->evaluator = sim::MakeEvaluator(impl_->problem);
  impl_->env = std::make_unique<PlacementEnv>(*impl_->problem, *impl_->evaluator);
  impl_->env->Reset(FastestStart(*impl_->problem, impl_->env->units()));
  impl_->env->Observe(&impl_->obs);
  impl_->policy = std::move(MakePolicy("placeto", {.hidden = hidden}, 1)).value();
  torch::set_num_threads(1);
}

EmbeddingTimer::~EmbeddingTimer() = default;

void EmbeddingTimer::ForwardBackward() {
  impl_->policy->zero_grad();
  static_cast<PlacetoPolicy&>(*impl_->policy).Embed(impl_->obs, impl_->env->dag()).sum().backward();
}

int EmbeddingTimer::nodes() const { return impl_->env->dag().num_nodes; }

}  // namespace dplace::learn
