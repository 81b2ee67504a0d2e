#include <map>
#include <mutex>
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
  r.Read("start", &o->start,
         "where episodes begin without a given start: heuristics (the best of the searches' "
         "start heuristics) or fastest (each unit on its fastest device)");
  if (o->start != "heuristics" && o->start != "fastest") {
    r.Fail("start", "'" + o->start + "' is not heuristics or fastest");
  }
}

std::string DefaultPolicyPath() { return DPLACE_POLICY_DIR "/placeto.pt"; }

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

class PlacetoPlacer : public place::Placer {
 public:
  PlacetoPlacer(PlacetoOptions o, std::shared_ptr<place::StartFinder> start)
      : o_(std::move(o)), start_(std::move(start)) {}
  std::string_view name() const override { return "placeto"; }

 private:
  StatusOr<place::PlaceResult> PlaceImpl(const sim::Problem& problem,
                                         const place::PlaceRequest& request) override {
    const std::string path = o_.policy.empty() ? DefaultPolicyPath() : o_.policy;
    DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<Policy> shared, CachedPolicy(path));
    std::shared_ptr<Policy> policy = shared;
    if (o_.fine_tune) {  // a private copy to train
      torch::serialize::OutputArchive out;
      WritePolicy(*shared, &out);
      std::ostringstream bytes;
      out.save_to(bytes);
      torch::serialize::InputArchive in;
      std::istringstream read(bytes.str());
      in.load_from(read);
      DPLACE_ASSIGN_OR_RETURN(policy, ReadPolicy(in, path));
    }
    const int threads = torch::get_num_threads();
    torch::set_num_threads(1);  // same seed, same placement; and fair against one-core searches
    auto restore = [&] { torch::set_num_threads(threads); };

    const place::Budget budget(request.limits, *request.evaluator, 64);
    // The problem itself, or its coarse version with its own evaluator whose evaluations are
    // counted on the request's.
    auto own = std::shared_ptr<const sim::Problem>(&problem, [](const sim::Problem*) {});
    auto prepared = ForPolicy(own, o_.max_units);
    if (!prepared.ok()) {
      restore();
      return prepared.status();
    }
    std::unique_ptr<sim::Evaluator> coarse_evaluator;
    sim::Evaluator* evaluator = request.evaluator;
    if (prepared->coarsening) {
      coarse_evaluator = sim::MakeEvaluator(prepared->problem);
      evaluator = coarse_evaluator.get();
    }
    const sim::Problem& p = *prepared->problem;
    const int units = static_cast<int>(place::MakeUnits(p).size());
    const int refresh = o_.refresh > 0 ? o_.refresh : std::max(1, (units + 15) / 16);
    PlacementEnv env(p, *evaluator, {.refresh_every = o_.fine_tune ? 1 : refresh});
    Reinforce reinforce({});
    std::unique_ptr<torch::optim::Adam> adam;
    if (o_.fine_tune) {
      adam = std::make_unique<torch::optim::Adam>(policy->parameters(),
                                                  torch::optim::AdamOptions(1e-4));
    }

    Rng rng(request.seed);
    int64_t counted = 0;
    auto count = [&] {  // coarse evaluations onto the request's evaluator
      if (coarse_evaluator == nullptr) return;
      request.evaluator->CountEvaluations(coarse_evaluator->evaluations() - counted);
      counted = coarse_evaluator->evaluations();
    };
    // Episodes improve a placement: the request's start, else the heuristics' best on the
    // problem the policy places (a handful of evaluations), else each unit on its fastest device.
    sim::Placement from = FastestStart(p, env.units());
    if (const sim::Placement* start = place::StartOf(problem, request)) {
      from = prepared->Coarse(*start);
    } else if (start_ != nullptr && o_.start == "heuristics") {
      const place::Start s = start_->Find(p, {.evaluator = evaluator, .seed = request.seed});
      if (!s.placement.empty()) from = s.placement;
      count();
    }
    int episodes = 0;
    // The most evaluations one episode makes: its start, its refreshes and its last step. An
    // episode begins only when the budget has that much left (the first always does).
    const int every = o_.fine_tune ? 1 : refresh;
    const int64_t per_episode = 2 + (units + every - 1) / every;
    while (episodes == 0 ||
           (!budget.Out() && (o_.episodes == 0 || episodes < o_.episodes) &&
            (budget.limits().evaluations == 0 || budget.Remaining().evaluations >= per_episode))) {
      Episode e = Rollout(env, *policy, from, episodes == 0 ? nullptr : &rng, o_.fine_tune);
      count();
      ++episodes;
      if (o_.fine_tune && !e.actions.empty()) {
        policy->zero_grad();
        SetGradients(*policy, reinforce.Gradient(*policy, env.dag(), e));
        adam->step();
        reinforce.Record(e);
      }
      from = env.best();
    }
    restore();
    place::PlaceResult out{.placement = prepared->Expand(env.best())};
    std::ostringstream note;
    note << episodes << (episodes == 1 ? " episode of " : " episodes of ")
         << (o_.policy.empty() ? std::string("the bundled policy") : "policy " + path)
         << (o_.fine_tune ? ", fine-tuned" : "");
    if (prepared->coarsening) {
      note << "; coarsened " << problem.num_ops() << " -> " << p.num_ops() << " ops";
    }
    out.note = note.str();
    return out;
  }

  PlacetoOptions o_;
  std::shared_ptr<place::StartFinder> start_;
};

}  // namespace

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
