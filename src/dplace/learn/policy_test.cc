// The Placeto policy's gradients against finite differences, policy files (and bad ones),
// checkpoints that resume exactly, and the placer's determinism and budget.
#include "dplace/learn/policy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <numeric>
#include <thread>

#include "dplace/io/test_files.h"
#include "dplace/learn/placeto.h"
#include "dplace/learn/rollout.h"
#include "dplace/learn/test_problems.h"
#include "dplace/learn/train.h"

namespace dplace::learn {
namespace {

std::shared_ptr<const sim::Problem> Generated(const std::string& family, const std::string& cluster,
                                              int index = 0) {
  return testing::Generated(family, cluster, 11, index);
}

struct Fixture {
  std::shared_ptr<const sim::Problem> problem = Generated("enas_cnn", "k80x4");
  std::unique_ptr<sim::Evaluator> evaluator = sim::MakeEvaluator(problem);
  PlacementEnv env{*problem, *evaluator};
  Observation obs;
  Fixture() {
    env.Reset(FastestStart(*problem, env.units()));
    for (int i = 0; i < 9; ++i) env.Step(sim::DeviceId(i % 4));
    env.Observe(&obs);
  }
};

TEST(PlacetoPolicyTest, GradientsMatchFiniteDifferences) {
  Fixture f;
  auto made = MakePolicy("placeto", {.hidden = 6}, 3);
  ASSERT_TRUE(made.ok());
  Policy& policy = **made;
  policy.to(torch::kFloat64);
  {  // off the kinks of relu: no bias exactly 0
    torch::NoGradGuard no_grad;
    torch::manual_seed(1);
    for (torch::Tensor& p : policy.parameters()) p.add_(torch::randn_like(p) * 0.1);
  }
  const torch::Tensor weights = torch::linspace(-1, 1, f.env.num_devices(), torch::kFloat64);
  auto loss = [&] {
    const torch::Tensor l = policy.Logits(f.obs, f.env.dag(), nullptr);
    return (torch::log_softmax(l, 0) * weights).sum();
  };
  policy.zero_grad();
  loss().backward();
  torch::NoGradGuard no_grad;
  int checked = 0;
  for (auto& item : policy.named_parameters()) {
    const std::string& name = item.key();
    torch::Tensor& p = item.value();
    const torch::Tensor grad = p.grad().clone().reshape({-1});
    torch::Tensor flat = p.view({-1});
    // A few entries of each weight: the message passing's, the MLPs', the scorer's.
    for (int64_t i = 0; i < flat.numel(); i += std::max<int64_t>(1, flat.numel() / 5)) {
      const double keep = flat[i].item<double>(), eps = 1e-6;
      flat[i] = keep + eps;
      const double up = loss().item<double>();
      flat[i] = keep - eps;
      const double down = loss().item<double>();
      flat[i] = keep;
      EXPECT_NEAR(grad[i].item<double>(), (up - down) / (2 * eps), 1e-6) << name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GT(checked, 50);
}

TEST(PlacetoPolicyTest, LogitsMaskWhatAUnitMayNotRunOn) {
  Fixture f;
  auto policy = MakePolicy("placeto", {}, 1).value();
  f.obs.allowed[1] = 0;
  const torch::Tensor l = policy->Logits(f.obs, f.env.dag(), nullptr);
  ASSERT_EQ(l.size(0), f.env.num_devices());
  EXPECT_TRUE(std::isinf(l[1].item<float>()));
  EXPECT_TRUE(std::isfinite(l[0].item<float>()));
  Rng rng(4);
  for (int i = 0; i < 50; ++i) EXPECT_NE(Choose(l, &rng), 1);
}

TEST(PolicyFileTest, RoundTripsAndBadFilesAreOneLine) {
  dplace::testing::TempDir dir;
  Fixture f;
  auto policy = MakePolicy("placeto", {.hidden = 8}, 2).value();
  const std::string path = dir.Path("p.pt");
  ASSERT_TRUE(SavePolicy(*policy, path).ok());
  auto loaded = LoadPolicy(path);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(torch::equal(policy->Logits(f.obs, f.env.dag(), nullptr),
                           (*loaded)->Logits(f.obs, f.env.dag(), nullptr)));

  // Truncated, foreign, missing, and a policy of another shape under a changed name.
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string truncated = dir.Write("truncated.pt", bytes.substr(0, bytes.size() / 2));
  const std::string foreign = dir.Write("foreign.pt", "{\"format\": \"dplace-graph/1\"}\n");
  torch::serialize::OutputArchive other;
  other.write("format", c10::IValue(std::string("dplace-policy/1")));
  other.write("kind", c10::IValue(std::string("placeto")));
  other.write("hidden", c10::IValue(int64_t{8}));
  other.write("node_features", c10::IValue(int64_t{kNodeFeatures + 1}));
  other.write("device_features", c10::IValue(int64_t{kDeviceFeatures}));
  const std::string wrong_shape = dir.Path("shape.pt");
  other.save_to(wrong_shape);
  torch::serialize::OutputArchive narrow;
  WritePolicy(*MakePolicy("placeto", {.hidden = 4}, 2).value(), &narrow);
  torch::serialize::OutputArchive relabelled;  // width 4's weights labelled width 8
  relabelled.write("format", c10::IValue(std::string("dplace-policy/1")));
  relabelled.write("kind", c10::IValue(std::string("placeto")));
  relabelled.write("hidden", c10::IValue(int64_t{8}));
  relabelled.write("node_features", c10::IValue(int64_t{kNodeFeatures}));
  relabelled.write("device_features", c10::IValue(int64_t{kDeviceFeatures}));
  torch::serialize::OutputArchive weights;
  MakePolicy("placeto", {.hidden = 4}, 2).value()->save(weights);
  relabelled.write("weights", weights);
  const std::string wrong_weights = dir.Path("weights.pt");
  relabelled.save_to(wrong_weights);
  auto diverged = MakePolicy("placeto", {.hidden = 8}, 2).value();  // as training at --lr inf
  {
    torch::NoGradGuard no_grad;
    diverged->parameters()[0].view({-1})[0] = std::numeric_limits<float>::infinity();
  }
  EXPECT_EQ(NonFiniteWeights(*diverged), 1);
  const std::string non_finite = dir.Path("diverged.pt");
  ASSERT_TRUE(SavePolicy(*diverged, non_finite).ok());
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir.Path("missing.pt"), "no such policy file"},
      {non_finite, "1 weights are NaN or infinite"},
      {truncated, "damaged policy file"},
      {foreign, "damaged policy file"},
      {wrong_shape, "node and"},
      {wrong_weights, "do not fit"},
      {dir.Path("loop_a.pt"), "no such policy file (Too many levels of symbolic links)"},
  };
  // A symbolic-link loop is no policy file, not a filesystem exception.
  std::filesystem::create_symlink(dir.Path("loop_b.pt"), dir.Path("loop_a.pt"));
  std::filesystem::create_symlink(dir.Path("loop_a.pt"), dir.Path("loop_b.pt"));
  for (const auto& [file, expected] : cases) {
    auto bad = LoadPolicy(file);
    ASSERT_FALSE(bad.ok()) << file;
    EXPECT_EQ(bad.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(bad.status().message().find(file), std::string::npos) << bad.status().message();
    EXPECT_NE(bad.status().message().find(expected), std::string::npos) << bad.status().message();
    EXPECT_EQ(bad.status().message().find('\n'), std::string::npos) << bad.status().message();
  }
}

// A byte flipped anywhere in a policy file: the load succeeds (the byte was one no reader uses)
// or is refused in one line, before LibTorch parses a damaged entry (no crash, no exception).
TEST(PolicyFileTest, AFlippedByteAnywhereIsRefusedInOneLineOrHarmless) {
  dplace::testing::TempDir dir;
  const std::string path = dir.Path("p.pt");
  ASSERT_TRUE(SavePolicy(*MakePolicy("placeto", {.hidden = 8}, 2).value(), path).ok());
  std::ifstream in(path, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  int refused = 0;
  const size_t stride = std::max<size_t>(1, bytes.size() / 400);
  for (size_t i = 0; i < bytes.size(); i += stride) {
    std::string damaged = bytes;
    damaged[i] = static_cast<char>(damaged[i] ^ 0x5A);
    const std::string file = dir.Write("flipped.pt", damaged);
    auto loaded = LoadPolicy(file);
    if (loaded.ok()) continue;
    ++refused;
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidInput);
    EXPECT_EQ(loaded.status().message().find('\n'), std::string::npos) << i;
  }
  EXPECT_GT(refused, 0);
}

std::vector<TrainProblem> SmallSet() {
  return {{"a", Generated("enas_cnn", "k80x4", 0)}, {"b", Generated("enas_rnn", "hetero", 1)}};
}

std::vector<torch::Tensor> Weights(const std::string& path) {
  std::vector<torch::Tensor> out;
  for (const torch::Tensor& p : LoadPolicy(path).value()->parameters()) out.push_back(p.clone());
  return out;
}

TEST(PolicyGradientTest, PposFirstEpochIsReinforceAndAClippedRatioGivesNoGradient) {
  const auto problem = Generated("enas_rnn", "k80x4");
  auto evaluator = sim::MakeEvaluator(problem);
  PlacementEnv env(*problem, *evaluator);
  auto policy = MakePolicy("placeto", {.hidden = 8}, 3).value();
  Rng rng(4);
  Episode e = Play(env, *policy, FastestStart(*problem, env.units()), Actor::Sample(&rng), true);
  ASSERT_EQ(e.log_probs.size(), e.actions.size());
  ASSERT_GT(e.actions.size(), 10u);
  PolicyGradient reinforce({.entropy = 0.01});
  PolicyGradient ppo(AlgorithmByName("ppo", {.entropy = 0.01}).value());
  ASSERT_EQ(ppo.options().clip, 0.2);
  const torch::Tensor a = reinforce.Gradient(*policy, env.dag(), e);
  const torch::Tensor b = ppo.Gradient(*policy, env.dag(), e);
  EXPECT_GT(a.abs().max().item<double>(), 0);
  EXPECT_TRUE(torch::allclose(a, b, 1e-4, 1e-7)) << (a - b).abs().max().item<double>();
  // Old probabilities that put every ratio beyond the clip range on the side its advantage
  // pushes toward (e for a positive advantage, 1/e for a negative): no gradient but the entropy's.
  PolicyGradient clipped_only(AlgorithmByName("ppo", {.entropy = 0}).value());
  const std::vector<double> advantage = clipped_only.Advantages(e);
  Episode pushed = e;
  for (size_t t = 0; t < advantage.size(); ++t) pushed.log_probs[t] -= advantage[t] > 0 ? 1 : -1;
  EXPECT_EQ(clipped_only.Gradient(*policy, env.dag(), pushed).abs().max().item<double>(), 0);
  // Within the range the gradient is the ratio's: a ratio of 1.1 scales REINFORCE's by 1.1.
  PolicyGradient reinforce_only({.entropy = 0});
  Episode near = e;
  for (double& l : near.log_probs) l -= std::log(1.1);
  const torch::Tensor plain = reinforce_only.Gradient(*policy, env.dag(), e);
  const torch::Tensor scaled = clipped_only.Gradient(*policy, env.dag(), near);
  EXPECT_TRUE(torch::allclose(scaled, 1.1 * plain, 1e-4, 1e-7));
  EXPECT_FALSE(AlgorithmByName("a2c", {}).ok());
  EXPECT_FALSE(AlgorithmByName("ppo", {.clip = 1.5}).ok());
}

// Imitation through the one loop and the one learner: a Stay episode keeps every unit where it is
// (its actions are their devices, its only evaluation the start's), and Adam steps on the
// imitation loss of a label raise its fit and lower the loss.
TEST(ImitationLossTest, AStayEpisodeKeepsEveryUnitAndStepsOnItsLossLearnTheLabel) {
  const auto problem = Generated("enas_rnn", "k80x4");
  auto evaluator = sim::MakeEvaluator(problem);
  PlacementEnv env(*problem, *evaluator);
  auto policy = MakePolicy("placeto", {.hidden = 8}, 3).value();
  const sim::Placement start = FastestStart(*problem, env.units());
  Episode e = Play(env, *policy, start, Actor::Stay(), true);
  EXPECT_EQ(evaluator->evaluations(), 1);
  ASSERT_EQ(e.units.size(), env.units().size());
  ASSERT_EQ(e.observations.size(), e.actions.size());
  for (size_t t = 0; t < e.units.size(); ++t)
    EXPECT_EQ(e.actions[t], start[env.units()[e.units[t]].ops.front()].value());
  // The label: every unit on the last device it may run on.
  for (place::UnitId u : e.units) e.targets.push_back(env.units()[u].devices.back().value());
  ImitationLoss imitation;
  Learner learner(*policy, 1e-2);
  double first_loss = 0, first_fit = 0, loss = 0, fit = 0;
  for (int step = 0; step < 30; ++step) {
    std::vector<std::tuple<int, double, double>> values;
    ASSERT_TRUE(learner.Update(
        imitation, {e}, {0}, [&](int) -> const UnitDag& { return env.dag(); }, {}, {}, &values));
    ASSERT_EQ(values.size(), 1u);
    std::tie(std::ignore, loss, fit) = values[0];
    if (step == 0) first_loss = loss, first_fit = fit;
  }
  EXPECT_LT(loss, 0.5 * first_loss);
  EXPECT_GT(fit, first_fit);
  EXPECT_GT(fit, 0.9);
}

// The whole-episode policies: a rollout replays exactly (the gradient recomputes the
// log-probability each step was played with, so PPO's first epoch is REINFORCE), every unit lands
// where it may run, the greedy episode is the same twice, and hdp's groups are its hidden choices.
TEST(EpisodePolicyTest, RolloutsReplayExactlyAndKeepToAllowedDevices) {
  const auto problem = Generated("nmt", "hetero", 2);
  for (const char* kind : {"colocrl", "hdp", "gdp"}) {
    SCOPED_TRACE(kind);
    auto evaluator = sim::MakeEvaluator(problem);
    auto units = PolicyUnits(*problem, 48).value();
    auto policy = MakePolicy(kind, {.hidden = 8, .groups = 16}, 3).value();
    ASSERT_TRUE(policy->whole_episode());
    PlacementEnv env(*problem, *evaluator, units, EpisodeOptions(*policy));
    const sim::Placement start = FastestStart(*problem, env.units());
    Rng rng(4);
    const int64_t before = evaluator->evaluations();
    Episode e = Play(env, *policy, start, Actor::Sample(&rng), true);
    // One evaluation for the start, one for the end (none when the episode left every unit
    // where it was); the next episode from the same start evaluates only its end.
    const int64_t first = evaluator->evaluations() - before;
    EXPECT_GE(first, 1);
    EXPECT_LE(first, 2);
    Episode again = Play(env, *policy, start, Actor::Sample(&rng), true);
    EXPECT_LE(evaluator->evaluations() - before - first, 1) << "the same start is evaluated once";
    EXPECT_EQ(again.start_cost, e.start_cost);
    for (sim::OpId op : env.placement().ids()) {
      EXPECT_TRUE(problem->Allowed(op, env.placement()[op]));
    }
    EXPECT_EQ(e.hidden.empty(), std::string(kind) != "hdp");
    for (int32_t g : e.hidden) EXPECT_LT(g, 16);
    // Rewards only at the end: the return is the start's cost minus the end's.
    for (size_t t = 0; t + 1 < e.rewards.size(); ++t) EXPECT_EQ(e.rewards[t], 0);
    EXPECT_DOUBLE_EQ(e.Return(), e.start_cost - e.end_cost);
    const AlgorithmOptions base = AlgorithmFor(*policy, {.entropy = 0.01});
    EXPECT_EQ(base.discount, 1);
    PolicyGradient reinforce(base);
    AlgorithmOptions ppo_options = base;
    ppo_options.clip = 0.2;
    PolicyGradient ppo(ppo_options);
    const torch::Tensor a = reinforce.Gradient(*policy, env.dag(), e);
    const torch::Tensor b = ppo.Gradient(*policy, env.dag(), e);
    EXPECT_GT(a.abs().max().item<double>(), 0);
    EXPECT_TRUE(torch::allclose(a, b, 1e-4, 1e-7)) << (a - b).abs().max().item<double>();
    // The greedy episode twice: the same placement.
    Play(env, *policy, start, Actor::Greedy(), false);
    const sim::Placement greedy = env.placement();
    Play(env, *policy, start, Actor::Greedy(), false);
    EXPECT_EQ(env.placement(), greedy);
  }
}

// Training lowers the cost a whole-episode policy reaches on its problem.
TEST(EpisodePolicyTest, TrainingLowersTheCost) {
  for (const char* kind : {"gdp", "hdp"}) {
    SCOPED_TRACE(kind);
    TrainOptions o{.method = kind,
                   .updates = 40,
                   .episodes = 4,
                   .seed = 3,
                   .hidden = 16,
                   .lr = 3e-3,
                   .lr_end = 3e-3,
                   .max_units = 32};
    o.groups = 16;
    auto trained = Train({{"a", Generated("enas_rnn", "v100x8-nvlink", 1)}}, o, nullptr);
    ASSERT_TRUE(trained.ok()) << trained.status().message();
    const std::vector<double>& curve = trained->curve;
    double first = 0, last = 0;
    for (size_t i = 0; i < 10; ++i) {
      first += curve[i];
      last += curve[curve.size() - 1 - i];
    }
    EXPECT_GT(last, first) << "mean return of the first 10 updates " << first / 10
                           << ", of the last 10 " << last / 10;
  }
}

TEST(TrainTest, ACheckpointResumesExactly) {
  for (const char* method : {"reinforce", "ppo", "hdp", "gdp", "colocrl"}) {
    SCOPED_TRACE(method);
    const std::string algorithm =
        std::string(method) == "ppo" || std::string(method) == "gdp" ? "ppo" : "reinforce";
    dplace::testing::TempDir dir;
    TrainOptions straight{.updates = 4, .episodes = 2, .seed = 5, .hidden = 8, .max_units = 48};
    if (algorithm != method) straight.method = method;
    straight.groups = 16;
    straight.max_grad_norm = 1;
    straight.algorithm = AlgorithmByName(algorithm, {}).value();
    straight.checkpoint = dir.Path("c{update}.pt");
    straight.checkpoint_every = 2;
    straight.out = dir.Path("straight.pt");
    auto a = Train(SmallSet(), straight, nullptr);
    ASSERT_TRUE(a.ok()) << a.status().message();
    ASSERT_TRUE(std::filesystem::exists(dir.Path("c2.pt")));
    TrainOptions resumed = straight;
    resumed.checkpoint.clear();
    resumed.resume = dir.Path("c2.pt");
    resumed.out = dir.Path("resumed.pt");
    auto b = Train(SmallSet(), resumed, nullptr);
    ASSERT_TRUE(b.ok()) << b.status().message();
    EXPECT_EQ(b->updates, 4);
    EXPECT_EQ(a->curve, b->curve);
    const auto wa = Weights(straight.out), wb = Weights(resumed.out);
    ASSERT_EQ(wa.size(), wb.size());
    for (size_t i = 0; i < wa.size(); ++i) EXPECT_TRUE(torch::equal(wa[i], wb[i])) << i;
    // The weights moved.
    const auto w0 =
        MakePolicy(straight.method, {.hidden = 8, .groups = 16}, 5).value()->parameters();
    bool moved = false;
    for (size_t i = 0; i < wa.size(); ++i) moved |= !torch::equal(wa[i], w0[i]);
    EXPECT_TRUE(moved);

    TrainOptions other = resumed;
    other.seed = 6;
    auto refused = Train(SmallSet(), other, nullptr);
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.status().message().find("seed 5"), std::string::npos);
  }
}

// The loss column (the last) of a training log in CSV, per update.
std::vector<double> LossCurve(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  std::vector<double> out;
  while (std::getline(in, line)) out.push_back(std::stod(line.substr(line.rfind(',') + 1)));
  return out;
}

TEST(TrainTest, ImitatingImprovingMovesMakesThemLikelyUnderTheProposal) {
  const auto problem = Generated("enas_cnn", "k80x4");
  const place::Units units = PolicyUnits(*problem, 256).value();
  ASSERT_GE(units.size(), 16u);
  // Two improving moves of a search: four units moved from the start, then four more.
  const sim::Placement start = FastestStart(*problem, units);
  auto move = [&](int unit, sim::Placement* x) {
    const place::Unit& u = units[place::UnitId(unit)];
    const sim::DeviceId here = (*x)[u.ops.front()];
    for (sim::DeviceId d : u.devices) {
      if (d != here) return place::Assign(u, d, x);
    }
  };
  sim::Placement first = start;
  for (int u = 0; u < 4; ++u) move(3 * u + 1, &first);
  sim::Placement second = first;
  for (int u = 4; u < 8; ++u) move(3 * u + 1, &second);
  const TrainOptions::Label label{.best = second, .steps = {{start, first}, {first, second}}};
  dplace::testing::TempDir dir;
  TrainOptions o{.method = "gdp",
                 .updates = 150,
                 .episodes = 2,
                 .seed = 3,
                 .hidden = 16,
                 .lr = 1e-2,
                 .lr_end = 1e-2,
                 .log = dir.Path("log.csv")};
  o.start = [&](const auto&) { return start; };
  o.label = [&](const auto&) { return label; };
  o.perturb = 0;
  auto trained = Train({{"a", problem}}, o, nullptr);
  ASSERT_TRUE(trained.ok()) << trained.status().message();
  // The proposal's negative log-likelihood of the steps falls, from above ln(units) (a unit drawn
  // about uniformly).
  const std::vector<double> loss = LossCurve(o.log);
  ASSERT_EQ(loss.size(), 150u);
  auto mean = [](const std::vector<double>& v, size_t from, size_t to) {
    return std::accumulate(v.begin() + from, v.begin() + to, 0.0) / (to - from);
  };
  EXPECT_GT(loss.front(), std::log(static_cast<double>(units.size())));
  EXPECT_LT(mean(loss, 120, 150), 0.7 * mean(loss, 0, 30));
}

TEST(PlacetoPlacerTest, SameSeedSamePlacementWithinTheBudget) {
  dplace::testing::TempDir dir;
  TrainOptions o{.updates = 1, .episodes = 1, .seed = 2, .hidden = 8, .max_units = 48};
  o.out = dir.Path("p.pt");
  ASSERT_TRUE(Train(SmallSet(), o, nullptr).ok());
  const auto problem = Generated("nasnet", "v100x8-nvlink", 3);
  auto placer = MakePlacetoPlacer({.policy = o.out, .max_units = 64});
  std::vector<sim::Placement> placements;
  for (int run = 0; run < 2; ++run) {
    auto evaluator = sim::MakeEvaluator(problem);
    auto placed = placer->Place(
        *problem, {.evaluator = evaluator.get(), .seed = 9, .limits = {.evaluations = 64}});
    ASSERT_TRUE(placed.ok()) << placed.status().message();
    EXPECT_LE(evaluator->evaluations(), 64);
    EXPECT_GE(evaluator->evaluations(), 20);
    EXPECT_NE(placed->note.find("coarsened"), std::string::npos) << placed->note;
    placements.push_back(placed->placement);
  }
  EXPECT_EQ(placements[0], placements[1]);
  // The whole-episode placers: fresh weights trained within the budget, the same placement twice.
  for (const char* method : {"colocrl", "hdp"}) {
    SCOPED_TRACE(method);
    std::vector<sim::Placement> twice;
    for (int run = 0; run < 2; ++run) {
      EpisodePlacerOptions eo{.method = method};
      place::OptionReader reader(method, {});
      ReadOptions(reader, &eo);
      eo.hidden = 8;
      auto episode_placer = MakeEpisodePlacer(eo);
      auto evaluator = sim::MakeEvaluator(problem);
      auto placed = episode_placer->Place(
          *problem, {.evaluator = evaluator.get(), .seed = 9, .limits = {.evaluations = 40}});
      ASSERT_TRUE(placed.ok()) << placed.status().message();
      EXPECT_LE(evaluator->evaluations(), 40);
      EXPECT_GE(evaluator->evaluations(), 2);
      // Episodes that move nothing evaluate nothing but count against the limit: 1 greedy and
      // 9 updates of 4 samples.
      EXPECT_EQ(placed->note.substr(0, placed->note.find(" of ")), "37 episodes, 9 updates")
          << placed->note;
      twice.push_back(placed->placement);
    }
    EXPECT_EQ(twice[0], twice[1]);
  }
  auto missing = MakePlacetoPlacer({.policy = dir.Path("none.pt")});
  auto evaluator = sim::MakeEvaluator(problem);
  auto failed = missing->Place(*problem, {.evaluator = evaluator.get()});
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), StatusCode::kInvalidInput);
}

TEST(LearnedPlacerTest, TwoThreadsPlacingAtOnceEachGetWhatTheyWouldAlone) {
  const auto problem = Generated("nasnet", "v100x8-nvlink", 3);
  // colocrl and hdp draw fresh weights from LibTorch's default generator and set its thread count:
  // both process-wide.
  auto place_with = [&](const char* method) {
    EpisodePlacerOptions eo{.method = method};
    place::OptionReader reader(method, {});
    ReadOptions(reader, &eo);
    eo.hidden = 8;
    auto evaluator = sim::MakeEvaluator(problem);
    auto placed = MakeEpisodePlacer(eo)->Place(
        *problem, {.evaluator = evaluator.get(), .seed = 9, .limits = {.evaluations = 24}});
    return placed.ok() ? placed->placement : sim::Placement();
  };
  const sim::Placement colocrl = place_with("colocrl"), hdp = place_with("hdp");
  ASSERT_FALSE(colocrl.empty());
  ASSERT_FALSE(hdp.empty());
  std::vector<sim::Placement> got(4);
  std::thread first([&] {
    got[0] = place_with("hdp");
    got[1] = place_with("colocrl");
  });
  std::thread second([&] {
    got[2] = place_with("colocrl");
    got[3] = place_with("hdp");
  });
  first.join();
  second.join();
  EXPECT_EQ(got[0], hdp);
  EXPECT_EQ(got[1], colocrl);
  EXPECT_EQ(got[2], colocrl);
  EXPECT_EQ(got[3], hdp);
}

}  // namespace
}  // namespace dplace::learn
