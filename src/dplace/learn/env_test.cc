// The environment's rewards are the evaluator's values, every evaluation is counted, and the
// message passing's hand-written gradients match finite differences.
#include "dplace/learn/env.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "dplace/learn/message_passing.h"
#include "dplace/learn/test_problems.h"
#include "dplace/sim/robust_evaluator.h"

namespace dplace::learn {
namespace {

std::shared_ptr<const sim::Problem> Generated(const std::string& family, const std::string& cluster,
                                              int index = 0) {
  return testing::Generated(family, cluster, 7, index);
}

TEST(UnitDagTest, EdgesGoForwardAndSumTheirBytes) {
  const auto p = Generated("enas_cnn", "k80x4");
  const place::Units units = place::MakeUnits(*p);
  const UnitDag dag = MakeUnitDag(*p, units);
  ASSERT_EQ(dag.num_nodes, static_cast<int>(units.size()));
  double bytes = 0;
  for (int32_t v = 0; v < dag.num_nodes; ++v) {
    const auto vi = static_cast<size_t>(v);
    for (int32_t i = dag.pred_offsets[vi]; i < dag.pred_offsets[vi + 1]; ++i) {
      EXPECT_LT(dag.preds[static_cast<size_t>(i)], v);
      if (i > dag.pred_offsets[vi]) {
        EXPECT_LT(dag.preds[static_cast<size_t>(i - 1)], dag.preds[static_cast<size_t>(i)]);
      }
      bytes += dag.edge_bytes[static_cast<size_t>(i)];
    }
  }
  EXPECT_EQ(dag.preds.size(), dag.succs.size());
  EXPECT_GT(bytes, 0);
}

TEST(PlacementEnvTest, RewardsAreTheEvaluatorsValuesAndEveryEvaluationCounts) {
  const auto p = Generated("enas_rnn", "k80x4");
  auto evaluator = sim::MakeEvaluator(p);
  auto judge = sim::MakeEvaluator(p);  // an independent evaluator to compare with
  PlacementEnv env(*p, *evaluator);
  const sim::Placement start = FastestStart(*p, env.units());
  env.Reset(start);
  EXPECT_EQ(evaluator->evaluations(), 1);
  const double start_cost = env.cost();
  EXPECT_DOUBLE_EQ(start_cost, env.CostOf(judge->Evaluate(env.placement())));
  double returned = 0;
  int64_t expected_evaluations = 1;
  std::mt19937 pick(3);
  Observation obs;
  while (!env.Done()) {
    env.Observe(&obs);
    ASSERT_EQ(obs.nodes.size(), env.units().size() * kNodeFeatures);
    ASSERT_EQ(obs.devices.size(), static_cast<size_t>(env.num_devices()) * kDeviceFeatures);
    for (float f : obs.nodes) ASSERT_TRUE(std::isfinite(f));
    const sim::DeviceId before = env.placement()[env.units()[env.Current()].ops.front()];
    // Every third step keeps the unit where it is: no evaluation then.
    const sim::DeviceId d =
        env.Current().value() % 3 == 0 ? before : sim::DeviceId(static_cast<int32_t>(pick() % 4));
    const double cost_before = env.cost();
    const double r = env.Step(d);
    if (d != before) ++expected_evaluations;
    EXPECT_EQ(evaluator->evaluations(), expected_evaluations);
    const sim::Evaluation e = judge->Evaluate(env.placement());
    EXPECT_DOUBLE_EQ(env.evaluation().value, e.value);
    EXPECT_EQ(env.evaluation().feasible, e.feasible);
    EXPECT_DOUBLE_EQ(r, cost_before - env.cost());
    returned += r;
  }
  EXPECT_NEAR(returned, start_cost - env.cost(), 1e-9);
  EXPECT_FALSE(env.best().empty());
  EXPECT_LE(env.best_score().value,
            env.evaluation().value + (env.evaluation().feasible ? 0 : 1e300));
}

TEST(PlacementEnvTest, UnderARobustEvaluatorEachJudgementPaysEveryVariantAndIsTheWorst) {
  const auto p = Generated("enas_rnn", "k80x4");
  auto robust = sim::MakeRobustEvaluator(p, {.count = 4, .quantile = 1, .seed = 2, .spread = 0.2});
  ASSERT_TRUE(robust.ok()) << robust.status().message();
  auto judge = sim::MakeRobustEvaluator(p, {.count = 4, .quantile = 1, .seed = 2, .spread = 0.2});
  PlacementEnv env(*p, **robust);
  env.Reset(FastestStart(*p, env.units()));
  EXPECT_EQ((*robust)->evaluations(), 4);
  const sim::Evaluation worst = (*judge)->Evaluate(env.placement());
  EXPECT_EQ(env.evaluation().value, worst.value);
  EXPECT_GT(worst.value, sim::MakeEvaluator(p)->Evaluate(env.placement()).value);
  EXPECT_DOUBLE_EQ(env.cost(), env.CostOf(worst));
  // A step that moves the unit judges again, on every variant.
  const sim::DeviceId here = env.placement()[env.units()[env.Current()].ops.front()];
  env.Step(sim::DeviceId((here.value() + 1) % 4));
  EXPECT_EQ((*robust)->evaluations(), 8);
  EXPECT_EQ(env.evaluation().value, (*judge)->Evaluate(env.placement()).value);
}

TEST(PlacementEnvTest, RefreshEveryKStepsEvaluatesLess) {
  const auto p = Generated("enas_rnn", "k80x4");
  auto evaluator = sim::MakeEvaluator(p);
  PlacementEnv env(*p, *evaluator, EnvOptions{.refresh_every = 8});
  env.Reset(FastestStart(*p, env.units()));
  const int64_t steps = static_cast<int64_t>(env.units().size());
  while (!env.Done()) env.Step(sim::DeviceId((env.Current().value() / 5) % 4));
  EXPECT_LE(evaluator->evaluations(), 1 + (steps + 7) / 8 + 1);
  auto judge = sim::MakeEvaluator(p);
  EXPECT_DOUBLE_EQ(env.evaluation().value, judge->Evaluate(env.placement()).value);
}

TEST(PlacementEnvTest, OverflowIsPenalisedByHowMuch) {
  const auto p = Generated("nmt", "k80x4");
  auto evaluator = sim::MakeEvaluator(p);
  PlacementEnv env(*p, *evaluator);
  sim::Evaluation e{.value = 2 * p->LowerBound()};
  e.devices.resize(2);
  e.devices[sim::DeviceId(0)] = {.peak_memory_bytes = 5, .memory_capacity_bytes = 10};
  e.devices[sim::DeviceId(1)] = {.peak_memory_bytes = 5, .memory_capacity_bytes = 10};
  EXPECT_DOUBLE_EQ(env.CostOf(e), 2);
  e.feasible = false;
  e.devices[sim::DeviceId(1)].peak_memory_bytes = 12;
  const double small = env.CostOf(e);
  e.devices[sim::DeviceId(1)].peak_memory_bytes = 20;
  const double large = env.CostOf(e);
  EXPECT_GT(small, 3);
  EXPECT_GT(large, small);
}

TEST(PlacementEnvTest, CoarseUnitsKeepEveryOpsPlacementUntilMoved) {
  const auto p = Generated("layered", "k80x4");
  const place::Units co_location = place::MakeUnits(*p);
  const place::Units units = PolicyUnits(*p, 32).value();
  ASSERT_LE(units.size(), 64u);
  ASSERT_LT(units.size(), co_location.size() / 4);
  // Every op in exactly one unit, and every co-location unit inside one of them.
  sim::PerOp<int> unit_of(p->num_ops(), -1);
  for (place::UnitId u : units.ids()) {
    for (sim::OpId op : units[u].ops) {
      ASSERT_EQ(unit_of[op], -1);
      unit_of[op] = u.value();
    }
  }
  for (const place::Unit& u : co_location) {
    for (sim::OpId op : u.ops) ASSERT_EQ(unit_of[op], unit_of[u.ops.front()]);
  }
  // A start that splits units over devices: ops alternate between devices 0 and 1.
  sim::Placement start(p->num_ops(), sim::DeviceId(0));
  for (const place::Unit& u : co_location) {
    place::Assign(u, sim::DeviceId(u.ops.front().value() % 2), &start);
  }
  auto evaluator = sim::MakeEvaluator(p);
  PlacementEnv env(*p, *evaluator, units);
  env.Reset(start);
  EXPECT_EQ(env.placement(), start);
  // Keeping the first unit where most of it is changes nothing and evaluates nothing.
  Observation obs;
  env.Observe(&obs);
  const place::Unit& first = units[place::UnitId(0)];
  int on_one = 0;
  for (sim::OpId op : first.ops) on_one += start[op] == sim::DeviceId(1) ? 1 : 0;
  const sim::DeviceId most(2 * on_one > static_cast<int>(first.ops.size()) ? 1 : 0);
  EXPECT_EQ(obs.devices[most.index() * kDeviceFeatures], 1.0f);  // "current device" bit
  env.Step(most);
  EXPECT_EQ(env.placement(), start);
  EXPECT_EQ(evaluator->evaluations(), 1);
  // Moving the second unit moves all its ops, and the evaluation is of every op's placement.
  const place::Unit& second = units[place::UnitId(1)];
  env.Step(sim::DeviceId(3));
  for (sim::OpId op : second.ops) EXPECT_EQ(env.placement()[op], sim::DeviceId(3));
  EXPECT_EQ(evaluator->evaluations(), 2);
  auto judge = sim::MakeEvaluator(p);
  EXPECT_DOUBLE_EQ(env.evaluation().value, judge->Evaluate(env.placement()).value);
}

TEST(PlacementEnvTest, ObservationNamesRelatives) {
  const auto p = Generated("layered", "v100x8-nvlink");
  auto evaluator = sim::MakeEvaluator(p);
  PlacementEnv env(*p, *evaluator);
  env.Reset(FastestStart(*p, env.units()));
  for (int i = 0; i < 40; ++i) env.Step(sim::DeviceId(i % 8));
  Observation obs;
  env.Observe(&obs);
  EXPECT_EQ(obs.current, 40);
  for (int32_t a : obs.ancestors) EXPECT_LT(a, 40);
  for (int32_t d : obs.descendants) EXPECT_GT(d, 40);
  EXPECT_LE(obs.parallel.size(), 8u);
  for (int32_t q : obs.parallel) {
    EXPECT_EQ(std::count(obs.ancestors.begin(), obs.ancestors.end(), q), 0);
    EXPECT_EQ(std::count(obs.descendants.begin(), obs.descendants.end(), q), 0);
  }
  // Done and current bits.
  EXPECT_EQ(obs.nodes[39 * kNodeFeatures + 7], 1.0f);
  EXPECT_EQ(obs.nodes[40 * kNodeFeatures + 8], 1.0f);
}

TEST(PlacementEnvTest, TheDeviceViewIsTheFullObservationsDeviceRowsAlone) {
  const auto p = Generated("layered", "v100x8-nvlink");
  auto evaluator = sim::MakeEvaluator(p);
  PlacementEnv env(*p, *evaluator);
  env.Reset(FastestStart(*p, env.units()));
  Observation all, devices;
  for (int i = 0; !env.Done(); ++i) {
    env.Observe(&all);
    env.Observe(&devices, PlacementEnv::View::kDevices);
    EXPECT_EQ(devices.current, all.current);
    ASSERT_EQ(devices.devices, all.devices) << "step " << i;
    EXPECT_EQ(devices.allowed, all.allowed);
    EXPECT_TRUE(devices.nodes.empty());
    EXPECT_TRUE(devices.ancestors.empty() && devices.descendants.empty());
    // Against a recount: the other units on each device, and their bytes with the current one's.
    std::vector<double> others(8, 0), bytes(8, 0);
    for (place::UnitId u : env.units().ids()) {
      if (u == env.Current()) continue;
      const sim::DeviceId d = env.placement()[env.units()[u].ops.front()];
      others[static_cast<size_t>(d.index())] += 1;
      bytes[static_cast<size_t>(d.index())] += env.units()[u].footprint_bytes;
    }
    for (size_t d = 0; d < 8; ++d) {
      const float* row = devices.devices.data() + d * kDeviceFeatures;
      EXPECT_FLOAT_EQ(row[7], static_cast<float>(others[d] / env.units().size()));
      const double capacity = p->c().devices()[sim::DeviceId(static_cast<int32_t>(d))].memory_bytes;
      EXPECT_NEAR(row[3], (bytes[d] + env.units()[env.Current()].footprint_bytes) / capacity, 1e-6);
    }
    env.Step(sim::DeviceId((i * 3) % 8));  // units move: the kept per-device sums follow them
  }
}

// Loss L = Σ c ⊙ m of both passes; gradients by hand against central differences.
TEST(MessagePassingTest, GradientsMatchFiniteDifferences) {
  constexpr size_t n = 7, k = 3;
  // A DAG: 0->2, 1->2, 2->3, 0->4, 3->5, 4->5, 5->6.
  const std::vector<int32_t> pred_offsets = {0, 0, 0, 2, 3, 4, 6, 7};
  const std::vector<int32_t> preds = {0, 1, 2, 0, 3, 4, 5};
  std::vector<int32_t> succ_offsets = {0, 2, 3, 4, 5, 6, 7, 7};
  std::vector<int32_t> succs = {2, 4, 2, 3, 5, 5, 6};
  std::mt19937 gen(5);
  std::normal_distribution<double> normal(0, 0.7);
  auto random = [&](size_t size) {
    std::vector<double> v(size);
    for (double& x : v) x = normal(gen);
    return v;
  };
  std::vector<double> h = random(n * k), w1 = random(k * k), b1 = random(k), w2 = random(k * k),
                      b2 = random(k), c = random(n * k);
  for (const bool reverse : {false, true}) {
    const PassEdges e =
        reverse ? PassEdges{&succ_offsets, &succs, true} : PassEdges{&pred_offsets, &preds, false};
    auto loss = [&] {
      std::vector<double> m(n * k), s(n * k), pre(n * k);
      PassForward<double>(e, static_cast<int>(n), h.data(),
                          {w1.data(), b1.data(), w2.data(), b2.data(), static_cast<int>(k)},
                          m.data(), {s.data(), pre.data()});
      double sum = 0;
      for (size_t i = 0; i < m.size(); ++i) sum += c[i] * m[i];
      return sum;
    };
    std::vector<double> m(n * k), s(n * k), pre(n * k);
    const PassWeights<double> w{w1.data(), b1.data(), w2.data(), b2.data(), static_cast<int>(k)};
    PassForward<double>(e, static_cast<int>(n), h.data(), w, m.data(), {s.data(), pre.data()});
    std::vector<double> gh(n * k, 0), gw1(k * k, 0), gb1(k, 0), gw2(k * k, 0), gb2(k, 0);
    std::vector<double> grad_m = c;
    PassBackward<double>(e, static_cast<int>(n), m.data(), w, {s.data(), pre.data()}, grad_m.data(),
                         {gh.data(), gw1.data(), gb1.data(), gw2.data(), gb2.data()});
    const std::vector<std::pair<std::vector<double>*, std::vector<double>*>> pieces = {
        {&h, &gh}, {&w1, &gw1}, {&b1, &gb1}, {&w2, &gw2}, {&b2, &gb2}};
    for (const auto& [values, grads] : pieces) {
      for (size_t i = 0; i < values->size(); ++i) {
        const double keep = (*values)[i], eps = 1e-6;
        (*values)[i] = keep + eps;
        const double up = loss();
        (*values)[i] = keep - eps;
        const double down = loss();
        (*values)[i] = keep;
        EXPECT_NEAR((*grads)[i], (up - down) / (2 * eps), 1e-6)
            << "reverse " << reverse << " " << i;
      }
    }
  }
}

}  // namespace
}  // namespace dplace::learn
