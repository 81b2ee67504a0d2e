#include "dplace/learn/train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <ostream>
#include <sstream>
#include <tuple>

#include "dplace/base/file_util.h"
#include "dplace/base/hash.h"
#include "dplace/base/interrupt.h"
#include "dplace/base/zip_check.h"
#include "dplace/learn/mpi.h"
#include "dplace/learn/rollout.h"

namespace dplace::learn {

bool HaveMpi() {
#ifdef DPLACE_HAVE_MPI
  return true;
#else
  return false;
#endif
}

namespace {

// The seed of one episode: the run's seed, the update and the slot, mixed (SplitMix64).
uint64_t EpisodeSeed(uint64_t seed, int64_t update, int slot) {
  uint64_t z = seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(update * 4099 + slot + 1);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

double CpuSeconds() { return static_cast<double>(std::clock()) / CLOCKS_PER_SEC; }

struct LogRow {
  int64_t update, episodes, evaluations;
  double seconds, mean_return, mean_cost;
};

Status WriteLog(const std::string& path, const std::vector<LogRow>& rows) {
  std::ostringstream out;
  if (path.size() >= 5 && path.substr(path.size() - 5) == ".json") {
    nlohmann::json j = nlohmann::json::array();
    for (const LogRow& r : rows) {
      j.push_back({{"update", r.update},
                   {"episodes", r.episodes},
                   {"evaluations", r.evaluations},
                   {"seconds", r.seconds},
                   {"mean_return", r.mean_return},
                   {"mean_cost", r.mean_cost}});
    }
    out << nlohmann::json{{"format", "dplace-train-log/1"}, {"updates", j}}.dump(1) << "\n";
  } else {
    out << "update,episodes,evaluations,seconds,mean_return,mean_cost\n";
    out << std::setprecision(9);
    for (const LogRow& r : rows) {
      out << r.update << "," << r.episodes << "," << r.evaluations << "," << r.seconds << ","
          << r.mean_return << "," << r.mean_cost << "\n";
    }
  }
  return WriteFileAtomically(path, out.str());
}

// `label` with its devices renamed, within each device kind, to agree with `like` on the most ops
// (greedily: the pair of devices sharing the most ops first).
sim::Placement Renamed(const sim::Problem& p, const sim::Placement& label,
                       const sim::Placement& like) {
  const auto n = static_cast<size_t>(p.num_devices());
  std::vector<std::vector<int64_t>> shared(n, std::vector<int64_t>(n, 0));
  for (sim::OpId op : p.g().op_ids()) ++shared[label[op].index()][like[op].index()];
  std::vector<std::tuple<int64_t, size_t, size_t>> pairs;
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = 0; b < n; ++b) {
      const sim::DeviceId da(static_cast<int32_t>(a)), db(static_cast<int32_t>(b));
      if (p.c().KindIndex(da) == p.c().KindIndex(db)) pairs.emplace_back(-shared[a][b], a, b);
    }
  }
  std::sort(pairs.begin(), pairs.end());
  std::vector<int32_t> to(n, -1);
  std::vector<char> taken(n, 0);
  for (const auto& [minus, a, b] : pairs) {
    if (to[a] >= 0 || taken[b]) continue;
    to[a] = static_cast<int32_t>(b);
    taken[b] = 1;
  }
  sim::Placement out = label;
  for (sim::DeviceId& d : out) d = sim::DeviceId(to[d.index()]);
  return out;
}

class Trainer {
 public:
  Trainer(const TrainOptions& o, std::shared_ptr<Policy> policy, MpiWorld& world)
      : o_(o),
        policy_(std::move(policy)),
        world_(world),
        algorithm_(AlgorithmFor(*policy_, o.algorithm)),
        learner_(*policy_, o.lr, o.max_grad_norm) {}

  Status Prepare(const std::vector<TrainProblem>& problems) {
    for (const TrainProblem& p : problems) {
      DPLACE_ASSIGN_OR_RETURN(place::Units units, PolicyUnits(*p.problem, o_.max_units));
      auto evaluator = sim::MakeEvaluator(p.problem);
      EnvOptions env_options = EpisodeOptions(*policy_);
      env_options.reuse_start = env_options.reuse_start && !o_.mixed_starts;
      auto env =
          std::make_unique<PlacementEnv>(*p.problem, *evaluator, std::move(units), env_options);
      sim::Placement start;
      if (o_.start) start = o_.start(p.problem);
      if (start.size() != static_cast<size_t>(p.problem->num_ops())) {
        start = FastestStart(*p.problem, env->units());
      }
      // An environment that keeps its start's judgement judges it now, once, so that an update
      // evaluates the same whether the run began here or resumed from a checkpoint (which
      // restores this count).
      if (env_options.reuse_start) {
        env->Reset(start);
        ++result_.evaluations;
      }
      if (o_.label) {
        TrainOptions::Label label = o_.label(p.problem);
        auto fits = [&](const sim::Placement& x) {
          return x.size() == static_cast<size_t>(p.problem->num_ops());
        };
        if (!fits(label.best) ||
            std::any_of(label.steps.begin(), label.steps.end(),
                        [&](const auto& s) { return !fits(s.first) || !fits(s.second); })) {
          return InvalidInput(p.name + ": no label placement");
        }
        labels_.push_back(std::move(label));
      }
      starts_.push_back(std::move(start));
      problems_.push_back(p.problem);
      evaluators_.push_back(std::move(evaluator));
      envs_.push_back(std::move(env));
    }
    result_.best_cost.assign(problems.size(), std::numeric_limits<double>::infinity());
    result_.first_cost.assign(problems.size(), -1);
    return OkStatus();
  }

  // One update: episodes on this rank's slots, their summaries gathered in slot order, then per
  // epoch of the algorithm one Adam step on the mean of every slot's gradient, gathered in slot
  // order.
  void Update() {
    if (o_.label) return Imitate();
    const int slots = o_.episodes;
    const auto num_problems = static_cast<int64_t>(envs_.size());
    const int samples = Samples();
    auto problem_of = [&](int s) {
      return static_cast<int>((update_ * (slots / samples) + s / samples) % num_problems);
    };
    // Per own slot: slot, evaluations, start cost, best cost, steps, rewards.
    std::vector<double> mine;
    std::vector<std::pair<int, Episode>> own;
    for (int s = world_.rank(); s < slots; s += world_.size()) {
      const int problem = problem_of(s);
      PlacementEnv& env = *envs_[static_cast<size_t>(problem)];
      sim::Evaluator& evaluator = *evaluators_[static_cast<size_t>(problem)];
      const int64_t before = evaluator.evaluations();
      Rng rng(EpisodeSeed(o_.seed, update_, s));
      const sim::Placement& fixed = starts_[static_cast<size_t>(problem)];
      Episode e = Play(env, *policy_, o_.mixed_starts ? MixedStart(env, fixed, rng) : fixed,
                       Actor::Sample(&rng), true);
      e.problem = problem;
      mine.push_back(s);
      mine.push_back(static_cast<double>(evaluator.evaluations() - before));
      mine.push_back(e.start_cost);
      mine.push_back(e.best_cost);
      mine.push_back(static_cast<double>(e.rewards.size()));
      mine.insert(mine.end(), e.rewards.begin(), e.rewards.end());
      own.emplace_back(s, std::move(e));
    }
    std::vector<Episode> episodes(static_cast<size_t>(slots));
    for (const std::vector<double>& from : world_.AllGather(mine)) {
      for (size_t i = 0; i < from.size();) {
        const auto s = static_cast<size_t>(from[i]);
        Episode& e = episodes[s];
        e.problem = problem_of(static_cast<int>(s));
        result_.evaluations += static_cast<int64_t>(from[i + 1]);
        e.start_cost = from[i + 2];
        e.best_cost = from[i + 3];
        const auto steps = static_cast<size_t>(from[i + 4]);
        i += 5;
        e.rewards.assign(from.begin() + static_cast<std::ptrdiff_t>(i),
                         from.begin() + static_cast<std::ptrdiff_t>(i + steps));
        i += steps;
      }
    }
    if (o_.updates > 0) {
      const double f = static_cast<double>(update_) / static_cast<double>(o_.updates);
      learner_.SetLearningRate(o_.lr + (o_.lr_end - o_.lr) * f);
    }
    std::vector<int> own_slots;
    for (auto& [s, e] : own) {
      own_slots.push_back(s);
      episodes[static_cast<size_t>(s)] = std::move(e);  // with its observations, for its gradient
    }
    learner_.Update(
        algorithm_, episodes, own_slots,
        [&](int problem) -> const UnitDag& { return envs_[static_cast<size_t>(problem)]->dag(); },
        [&](const std::vector<std::pair<int, torch::Tensor>>& gradients, int size) {
          return GatheredMean(gradients, size);
        });
    double mean_return = 0, mean_cost = 0;
    for (const Episode& e : episodes) {
      double end = e.start_cost;
      for (double r : e.rewards) end -= r;
      mean_return += (e.start_cost - end) / slots;
      mean_cost += end / slots;
      const auto p = static_cast<size_t>(e.problem);
      if (result_.first_cost[p] < 0) result_.first_cost[p] = end;
      result_.best_cost[p] = std::min(result_.best_cost[p], e.best_cost);
    }
    ++update_;
    result_.updates = update_;
    result_.episodes += slots;
    result_.curve.push_back(mean_return);
    log_.push_back({update_, result_.episodes, result_.evaluations, 0, mean_return, mean_cost});
  }

  // A start drawn from TrainOptions::mixed_starts's mix.
  sim::Placement MixedStart(const PlacementEnv& env, const sim::Placement& start, Rng& rng) const {
    const place::Units& units = env.units();
    sim::Placement x = start;
    switch (rng.Below(3)) {
      case 0:  // random
        for (const place::Unit& u : units)
          place::Assign(u, u.devices[rng.Below(u.devices.size())], &x);
        return x;
      case 1:
        return FastestStart(env.problem(), units);
      default:
        break;
    }
    const auto moves = rng.Below(static_cast<uint64_t>(o_.perturb) + 1);
    for (uint64_t k = 0; k < moves; ++k) {
      const place::Unit& u = units[place::UnitId(static_cast<int32_t>(rng.Below(units.size())))];
      place::Assign(u, u.devices[rng.Below(u.devices.size())], &x);
    }
    return x;
  }

  // One imitation update (TrainOptions::label): per own slot an episode from the label perturbed,
  // every unit kept where it is; the mean over slots of the cross-entropy's gradient.
  void Imitate() {
    const int slots = o_.episodes;
    const auto num_problems = static_cast<int64_t>(envs_.size());
    auto problem_of = [&](int s) { return static_cast<int>((update_ * slots + s) % num_problems); };
    std::vector<Episode> episodes(static_cast<size_t>(slots));
    std::vector<int> own;
    std::vector<int64_t> evaluations;  // per own slot
    for (int s = world_.rank(); s < slots; s += world_.size()) {
      const int problem = problem_of(s);
      PlacementEnv& env = *envs_[static_cast<size_t>(problem)];
      sim::Evaluator& evaluator = *evaluators_[static_cast<size_t>(problem)];
      const int64_t before = evaluator.evaluations();
      Rng rng(EpisodeSeed(o_.seed, update_, s));
      const TrainOptions::Label& imitated = labels_[static_cast<size_t>(problem)];
      const bool steps = !imitated.steps.empty();
      const place::Units& units = env.units();
      sim::Placement x, label;
      if (!steps) {
        // Half the episodes begin near the label, half near where the search began (what the
        // search changed there is what a proposal should find), the label's devices then renamed
        // among devices of a kind to agree most with that start (identical devices are
        // interchangeable: a label's names are one of many).
        const bool near_label = rng.Below(2) == 0;
        x = near_label ? imitated.best : starts_[static_cast<size_t>(problem)];
        label = near_label ? imitated.best
                           : Renamed(*problems_[static_cast<size_t>(problem)], imitated.best, x);
      } else {
        const auto& step = imitated.steps[rng.Below(imitated.steps.size())];
        x = step.first;
        label = step.second;
      }
      const auto moves = static_cast<int>(rng.Below(static_cast<uint64_t>(o_.perturb) + 1));
      for (int k = 0; k < moves; ++k) {
        const place::UnitId u(static_cast<int32_t>(rng.Below(units.size())));
        const auto& allowed = units[u].devices;
        place::Assign(units[u], allowed[rng.Below(allowed.size())], &x);
      }
      // The episode, every unit kept (no evaluation but its start's), and each unit's label.
      Episode e = Play(env, *policy_, x, Actor::Stay(), true);
      e.problem = problem;
      e.label_is_move = steps;
      for (place::UnitId u : e.units) e.targets.push_back(label[units[u].ops.front()].value());
      episodes[static_cast<size_t>(s)] = std::move(e);
      own.push_back(s);
      evaluations.push_back(evaluator.evaluations() - before);
    }
    if (o_.updates > 0) {
      const double f = static_cast<double>(update_) / static_cast<double>(o_.updates);
      learner_.SetLearningRate(o_.lr + (o_.lr_end - o_.lr) * f);
    }
    std::vector<std::tuple<int, double, double>> values;  // per own slot: slot, loss, accuracy
    learner_.Update(
        imitation_, episodes, own,
        [&](int problem) -> const UnitDag& { return envs_[static_cast<size_t>(problem)]->dag(); },
        [&](const std::vector<std::pair<int, torch::Tensor>>& gradients, int size) {
          return GatheredMean(gradients, size);
        },
        {}, &values);
    std::vector<double> mine;  // per own slot: slot, evaluations, loss, accuracy
    for (size_t i = 0; i < values.size(); ++i) {
      const auto& [s, loss, accuracy] = values[i];
      mine.insert(mine.end(),
                  {static_cast<double>(s), static_cast<double>(evaluations[i]), loss, accuracy});
    }
    double mean_loss = 0, mean_accuracy = 0;
    for (const std::vector<double>& from : world_.AllGather(mine)) {
      for (size_t i = 0; i + 3 < from.size(); i += 4) {
        result_.evaluations += static_cast<int64_t>(from[i + 1]);
        mean_loss += from[i + 2] / slots;
        mean_accuracy += from[i + 3] / slots;
      }
    }
    ++update_;
    result_.updates = update_;
    result_.episodes += slots;
    result_.curve.push_back(mean_accuracy);
    log_.push_back({update_, result_.episodes, result_.evaluations, 0, mean_accuracy, mean_loss});
  }

  // The mean of every slot's gradient (`mine`: this rank's), gathered in slot order so that any
  // number of ranks adds them up the same way.
  torch::Tensor GatheredMean(const std::vector<std::pair<int, torch::Tensor>>& mine, int slots) {
    const int64_t width = FlatGradients(*policy_).numel();
    std::vector<double> flat;  // per own slot: slot, gradient
    for (const auto& [s, g] : mine) {
      const torch::Tensor g64 = g.to(torch::kFloat64).contiguous();
      flat.push_back(s);
      flat.insert(flat.end(), g64.data_ptr<double>(), g64.data_ptr<double>() + g64.numel());
    }
    std::vector<torch::Tensor> grads(static_cast<size_t>(slots));
    for (const std::vector<double>& from : world_.AllGather(flat)) {
      for (size_t i = 0; i < from.size(); i += 1 + static_cast<size_t>(width)) {
        std::vector<double> g(from.begin() + static_cast<std::ptrdiff_t>(i + 1),
                              from.begin() + static_cast<std::ptrdiff_t>(i + 1) + width);
        grads[static_cast<size_t>(from[i])] = torch::tensor(g, torch::kFloat64).to(torch::kFloat32);
      }
    }
    torch::Tensor total = torch::zeros({width});
    for (const torch::Tensor& g : grads) total += g;
    return total / slots;
  }

  Status SaveCheckpoint(std::string path) {
    for (size_t at; (at = path.find("{update}")) != std::string::npos;) {
      path.replace(at, 8, std::to_string(update_));
    }
    torch::serialize::OutputArchive a;
    torch::serialize::OutputArchive policy, optimizer;
    WritePolicy(*policy_, &policy);
    a.write("policy", policy);
    learner_.adam().save(optimizer);
    a.write("optimizer", optimizer);
    algorithm_.Save(&a);
    a.write("update", c10::IValue(update_));
    a.write("episodes", c10::IValue(result_.episodes));
    a.write("evaluations", c10::IValue(result_.evaluations));
    a.write("seed", c10::IValue(static_cast<int64_t>(o_.seed)));
    a.write("slots", c10::IValue(static_cast<int64_t>(o_.episodes)));
    a.write("best_cost", torch::tensor(result_.best_cost, torch::kFloat64));
    a.write("first_cost", torch::tensor(result_.first_cost, torch::kFloat64));
    a.write("curve", torch::tensor(result_.curve.empty() ? std::vector<double>{} : result_.curve,
                                   torch::kFloat64));
    std::ostringstream bytes;
    a.save_to(bytes);
    return WriteFileAtomically(path, bytes.str(), "checkpoint");  // may replace the one resumed
  }

  Status LoadCheckpoint(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec)) {
      return InvalidInput(path + ": no such checkpoint" + (ec ? " (" + ec.message() + ")" : ""));
    }
    DPLACE_ASSIGN_OR_RETURN(const std::string bytes, ReadZipFile(path, "checkpoint", "checkpoint"));
    try {
      torch::serialize::InputArchive a;
      std::istringstream in(bytes);
      a.load_from(in);
      torch::serialize::InputArchive policy, optimizer;
      a.read("policy", policy);
      DPLACE_ASSIGN_OR_RETURN(std::shared_ptr<Policy> loaded, ReadPolicy(policy, path));
      if (loaded->shape().hidden != policy_->shape().hidden) {
        return InvalidInput(path + ": checkpoint of width " +
                            std::to_string(loaded->shape().hidden) + ", not " +
                            std::to_string(policy_->shape().hidden));
      }
      torch::NoGradGuard no_grad;
      const auto from = loaded->parameters();
      auto to = policy_->parameters();
      for (size_t i = 0; i < to.size(); ++i) to[i].copy_(from[i]);
      a.read("optimizer", optimizer);
      learner_.adam().load(optimizer);
      algorithm_.Load(a);
      c10::IValue v;
      a.read("update", v);
      update_ = v.toInt();
      a.read("episodes", v);
      result_.episodes = v.toInt();
      a.read("evaluations", v);
      result_.evaluations = v.toInt();
      a.read("seed", v);
      const int64_t seed = v.toInt();
      a.read("slots", v);
      if (seed != static_cast<int64_t>(o_.seed) || v.toInt() != o_.episodes) {
        return InvalidInput(path + ": checkpoint of seed " + std::to_string(seed) + " and " +
                            std::to_string(v.toInt()) + " episodes per update; give the same");
      }
      auto read_vector = [&](const char* key) {
        torch::Tensor t;
        a.read(key, t);
        return std::vector<double>(t.data_ptr<double>(), t.data_ptr<double>() + t.numel());
      };
      const std::vector<double> best = read_vector("best_cost");
      if (best.size() != result_.best_cost.size()) {
        return InvalidInput(path + ": checkpoint of " + std::to_string(best.size()) +
                            " problems, not " + std::to_string(result_.best_cost.size()));
      }
      result_.best_cost = best;
      result_.first_cost = read_vector("first_cost");
      result_.curve = read_vector("curve");
    } catch (const c10::Error& e) {
      return InvalidInput(path + ": not a training checkpoint (" + TorchErrorLine(e) + ")");
    } catch (const std::exception& e) {  // TorchScript's parser on an entry the check passed
      return InvalidInput(path + ": damaged checkpoint (" + TorchErrorLine(e) + ")");
    }
    result_.updates = update_;
    return OkStatus();
  }

  // Episodes of one problem in an update (TrainOptions::samples).
  int Samples() const {
    if (o_.samples > 0) return o_.samples;
    return policy_->whole_episode() && o_.episodes % 4 == 0 ? 4 : 1;
  }

  int64_t update() const { return update_; }
  TrainResult& result() { return result_; }
  std::vector<LogRow>& log() { return log_; }
  Policy& policy() { return *policy_; }

 private:
  TrainOptions o_;
  std::shared_ptr<Policy> policy_;
  MpiWorld& world_;
  PolicyGradient algorithm_;
  ImitationLoss imitation_;
  Learner learner_;
  std::vector<std::shared_ptr<const sim::Problem>> problems_;  // what the environments judge
  std::vector<std::unique_ptr<sim::Evaluator>> evaluators_;
  std::vector<std::unique_ptr<PlacementEnv>> envs_;
  std::vector<sim::Placement> starts_;
  std::vector<TrainOptions::Label> labels_;  // imitation: per problem
  int64_t update_ = 0;
  TrainResult result_;
  std::vector<LogRow> log_;
};

// A digest of `bytes` that a double holds exactly (53 bits of FNV-1a): compared across ranks.
double Digest(std::string_view bytes) {
  return static_cast<double>(Fnv1a64(bytes) % (uint64_t{1} << 53));
}

// A digest of what each problem's episodes learn from: its imitation label (the search's best
// placement and the improving moves it kept), so that ranks given different --imitate,
// --improving or --relabel, or label caches of other machines, are told apart. 0 without labels.
double LabelDigest(const std::vector<TrainProblem>& problems, const TrainOptions& o) {
  if (!o.label) return 0;
  std::string bytes;
  auto add = [&bytes](const sim::Placement& p) {
    for (const sim::DeviceId d : p) bytes += std::to_string(d.value()) + ",";
    bytes += ";";
  };
  for (const TrainProblem& p : problems) {
    const TrainOptions::Label label = o.label(p.problem);
    add(label.best);
    for (const auto& [before, after] : label.steps) {
      add(before);
      add(after);
    }
  }
  return Digest(bytes);
}

}  // namespace

// Whether every rank set up and was given the same training: each rank's own error is its own
// line; the others say which rank failed or which flag differs (every option that changes what is
// learned, and the labels themselves). One process: `ready`.
Status AgreeToStart(const MpiWorld& world, const Status& ready, const TrainOptions& o,
                    const std::vector<TrainProblem>& problems, int64_t update) {
  if (world.size() == 1) return ready;
  const AlgorithmOptions& a = o.algorithm;
  const std::vector<std::pair<const char*, double>> given = {
      {"--method", Digest(o.method)},
      {"--groups", o.groups},
      {"--max-grad-norm", o.max_grad_norm},
      {"--episodes", o.episodes},
      {"--samples", o.samples},
      {"--updates", static_cast<double>(o.updates)},
      {"--evaluations", static_cast<double>(o.evaluations)},
      {"--seconds", o.seconds},
      {"--seed", static_cast<double>(o.seed % (uint64_t{1} << 53))},
      {"--hidden", o.hidden},
      {"--lr", o.lr},
      {"--lr-end", o.lr_end},
      {"--entropy", a.entropy},
      {"--discount", a.discount},
      {"--clip (or --algorithm)", a.clip},
      {"--epochs (or --algorithm)", a.epochs},
      {"the baseline's window", a.baseline_window},
      {"the advantages' scaling", a.problem_scale ? 1.0 : 0.0},
      {"--max-units", o.max_units},
      {"--perturb", o.perturb},
      {"--mixed-starts", o.mixed_starts ? 1.0 : 0.0},
      {"--imitate (its labels' digest)", ready.ok() ? LabelDigest(problems, o) : 0},
      {"graphs", static_cast<double>(problems.size())},
      {"the update resumed from", static_cast<double>(update)}};
  std::vector<double> mine = {ready.ok() ? 1.0 : 0.0};
  for (const auto& [name, value] : given) mine.push_back(value);
  const std::vector<std::vector<double>> all = world.AllGather(mine);
  if (!ready.ok()) return ready;
  for (size_t rank = 0; rank < all.size(); ++rank) {
    if (all[rank].size() != mine.size() || all[rank][0] != 1) {
      return InvalidInput("training stopped: rank " + std::to_string(rank) +
                          " could not start (its error is on its own line)");
    }
  }
  for (size_t rank = 1; rank < all.size(); ++rank) {
    for (size_t i = 0; i < given.size(); ++i) {
      if (all[rank][i + 1] != all[0][i + 1]) {
        std::ostringstream line;
        line << "training stopped: rank " << rank << " has " << given[i].first << " "
             << all[rank][i + 1] << ", rank 0 " << all[0][i + 1]
             << " (every rank must be given the same training)";
        return InvalidInput(line.str());
      }
    }
  }
  return OkStatus();
}

StatusOr<TrainResult> Train(const std::vector<TrainProblem>& problems, const TrainOptions& o,
                            std::ostream* progress) {
  if (problems.empty()) return InvalidInput("nothing to train on: no graphs");
  if (o.episodes < 1) return InvalidInput("--episodes must be at least 1");
  if (o.samples < 0 || (o.samples > 0 && o.episodes % o.samples != 0)) {
    return InvalidInput("--samples must divide --episodes");
  }
  DPLACE_ASSIGN_OR_RETURN(MpiWorld * world, MpiWorld::Get());
  torch::set_num_threads(1);
  // Every rank sets up (policy, problems, checkpoint) before the ranks agree to start: a rank
  // that fails stops them all, none waits for it.
  std::unique_ptr<Trainer> made;
  Status ready = [&]() -> Status {
    std::shared_ptr<Policy> policy;
    if (!o.init.empty()) {
      DPLACE_ASSIGN_OR_RETURN(policy, LoadPolicy(o.init));
      if (policy->kind() != o.method) {
        return InvalidInput("--init " + o.init + ": a " + policy->kind() + " policy, not " +
                            o.method + " (--method)");
      }
    } else {
      DPLACE_ASSIGN_OR_RETURN(
          policy, MakePolicy(o.method, {.hidden = o.hidden, .groups = o.groups}, o.seed));
    }
    made = std::make_unique<Trainer>(o, policy, *world);
    DPLACE_RETURN_IF_ERROR(made->Prepare(problems));
    if (!o.resume.empty()) DPLACE_RETURN_IF_ERROR(made->LoadCheckpoint(o.resume));
    return OkStatus();
  }();
  DPLACE_RETURN_IF_ERROR(AgreeToStart(*world, ready, o, problems, ready.ok() ? made->update() : 0));
  Trainer& trainer = *made;
  const bool lead = world->rank() == 0;
  const int64_t updates = o.updates == 0 && o.evaluations == 0 && o.seconds == 0 ? 100 : o.updates;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSeconds();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  TrainResult& r = trainer.result();
  Status saved;  // the lead's last checkpoint
  while (true) {
    // The ranks decide together whether to go on (a time budget ends at different moments on
    // each): the most any says, 0 go on, 1 stop, 2 a rank failed.
    const bool go = (updates == 0 || trainer.update() < updates) &&
                    (o.evaluations == 0 || r.evaluations < o.evaluations) &&
                    (o.seconds == 0 || elapsed() < o.seconds);
    const double say = !saved.ok() ? 2 : go ? 0 : 1;
    const double decided = world->Max(say);
    if (decided == 2) {
      if (!saved.ok()) return saved;
      return InvalidInput("training stopped: rank 0 could not write its checkpoint");
    }
    if (decided == 1) break;
    // A stop asked for (Ctrl-C in Python, base/interrupt.h; never installed under mpirun): no
    // more updates and no output written.
    if (Interrupted()) return InvalidInput("training stopped: interrupted");
    trainer.Update();
    // Every rank holds the same weights: all stop here alike.
    if (const int64_t bad = NonFiniteWeights(trainer.policy()); bad > 0) {
      return InvalidInput("training diverged at update " + std::to_string(trainer.update()) + ": " +
                          std::to_string(bad) +
                          " weights are NaN or infinite (lower --lr, or set --max-grad-norm)");
    }
    trainer.log().back().seconds = elapsed();
    if (lead && progress != nullptr) {
      *progress << "update " << trainer.update() << "  episodes " << r.episodes << "  evaluations "
                << r.evaluations << "  mean return " << std::fixed << std::setprecision(4)
                << r.curve.back() << "  best cost";
      for (size_t p = 0; p < r.best_cost.size() && p < 8; ++p) {
        *progress << " " << problems[p].name << " " << std::setprecision(3) << r.best_cost[p];
      }
      if (r.best_cost.size() > 8) *progress << " ...";
      *progress << std::defaultfloat << "\n";
    }
    if (lead && !o.checkpoint.empty() && o.checkpoint_every > 0 &&
        trainer.update() % o.checkpoint_every == 0) {
      saved = trainer.SaveCheckpoint(o.checkpoint);
    }
  }
  r.seconds = elapsed();
  r.ranks = world->size();
  r.rank = world->rank();
  r.cpu_seconds = CpuSeconds() - cpu_start;
  if (lead) {
    if (!o.checkpoint.empty()) DPLACE_RETURN_IF_ERROR(trainer.SaveCheckpoint(o.checkpoint));
    std::ostringstream note;
    note << "trained on " << problems.size() << " problems: " << r.updates << " updates, "
         << r.episodes << " episodes, " << r.evaluations << " evaluations, " << std::fixed
         << std::setprecision(0) << r.cpu_seconds * r.ranks << " CPU s (seed " << o.seed << ")";
    if (!o.out.empty()) DPLACE_RETURN_IF_ERROR(SavePolicy(trainer.policy(), o.out, note.str()));
    if (!o.log.empty()) DPLACE_RETURN_IF_ERROR(WriteLog(o.log, trainer.log()));
  }
  return r;
}

}  // namespace dplace::learn
