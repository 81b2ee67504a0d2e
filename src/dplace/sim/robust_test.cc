// Variants of a problem (variants.h) and the robust evaluator (robust_evaluator.h).
#include <gtest/gtest.h>

#include <algorithm>

#include "dplace/base/rng.h"
#include "dplace/graph/synthetic.h"
#include "dplace/sim/robust_evaluator.h"
#include "dplace/sim/step_sim.h"
#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

using testing::Make;
using testing::ThreeDevices;
using testing::TimedOp;

// A layered graph on two GPUs and a CPU with latency: every model and noise changes its times.
std::shared_ptr<const Problem> Layered() {
  auto g = std::make_shared<const graph::Graph>(
      graph::MakeLayeredGraph({.num_ops = 120, .width = 5, .seed = 2}));
  hw::ClusterBuilder cb("three");
  cb.AddDevice(
      {.name = "g0", .kind = "gpu", .peak_flops = 1e13, .memory_bandwidth_bytes_per_s = 1e12});
  cb.AddDevice(
      {.name = "g1", .kind = "gpu", .peak_flops = 1e13, .memory_bandwidth_bytes_per_s = 1e12});
  cb.AddDevice({.name = "c0", .kind = "cpu", .peak_flops = 1e12});
  cb.SetDefaultLink({.bandwidth_bytes_per_s = 5e9, .latency_s = 5e-5});
  auto cluster = std::make_shared<const hw::Cluster>(std::move(cb.Build()).value());
  return std::make_shared<const Problem>(
      std::move(MakeProblem(g, cluster, Objective::kStep, cost::RooflineCostModel())).value());
}

Placement RandomPlacement(const Problem& p, Rng& rng) {
  Placement placement(static_cast<size_t>(p.num_ops()));
  for (auto& d : placement) {
    d = static_cast<DeviceId>(rng.Below(static_cast<uint64_t>(p.num_devices())));
  }
  return placement;
}

TEST(VariantsTest, NoNoiseAndTheDefaultModelIsTheBase) {
  const auto base = Layered();
  const Problem same = std::move(MakeVariant(*base, {.seed = 9})).value();
  EXPECT_EQ(same.lower_bound, base->lower_bound);
  Rng rng(3);
  for (int i = 0; i < 20; ++i) {
    const Placement p = RandomPlacement(*base, rng);
    const Evaluation a = SimulateStep(*base, p).evaluation;
    const Evaluation b = SimulateStep(same, p).evaluation;
    ASSERT_EQ(a.value, b.value);
    for (DeviceId d : a.devices.ids()) {
      ASSERT_EQ(a.devices[d].peak_memory_bytes, b.devices[d].peak_memory_bytes);
    }
  }
}

TEST(VariantsTest, SameSeedSameVariantOtherSeedOtherNoise) {
  const auto base = Layered();
  const VariantSpec spec{.op_time_spread = 0.2, .bandwidth_spread = 0.3, .seed = 42};
  const Problem a = std::move(MakeVariant(*base, spec)).value();
  const Problem b = std::move(MakeVariant(*base, spec)).value();
  VariantSpec other = spec;
  other.seed = 43;
  const Problem c = std::move(MakeVariant(*base, other)).value();
  int differ = 0;
  for (OpId op : base->g().op_ids()) {
    for (DeviceId d : base->c().device_ids()) {
      ASSERT_EQ(a.costs.OpTime(op, d), b.costs.OpTime(op, d));
      differ += a.costs.OpTime(op, d) != c.costs.OpTime(op, d);
    }
  }
  EXPECT_GT(differ, 0);
  for (DeviceId s : base->c().device_ids()) {
    for (DeviceId d : base->c().device_ids()) {
      ASSERT_EQ(a.c().LinkBetween(s, d).bandwidth_bytes_per_s,
                b.c().LinkBetween(s, d).bandwidth_bytes_per_s);
    }
  }
  EXPECT_NE(a.c().LinkBetween(DeviceId(0), DeviceId(1)).bandwidth_bytes_per_s,
            a.c().LinkBetween(DeviceId(1), DeviceId(0)).bandwidth_bytes_per_s);
  // The graph is shared, not copied; the noisy variant's bound holds.
  EXPECT_EQ(a.graph, base->graph);
  Rng rng(5);
  for (int i = 0; i < 20; ++i) {
    EXPECT_LE(a.lower_bound, SimulateStep(a, RandomPlacement(a, rng)).evaluation.value);
  }
}

TEST(VariantsTest, VariantKCyclesThroughTheFourModels) {
  const RobustOptions o{.count = 8, .seed = 7, .spread = 0.05};
  const StepModel want[4] = {{Channels::kPerPair, LatencyMode::kGap},
                             {Channels::kPerDevice, LatencyMode::kGap},
                             {Channels::kPerPair, LatencyMode::kArrival},
                             {Channels::kPerDevice, LatencyMode::kArrival}};
  for (int k = 0; k < 8; ++k) {
    const VariantSpec s = RobustVariantSpec(k, o);
    EXPECT_EQ(s.model, want[k % 4]) << k;
    EXPECT_EQ(s.op_time_spread, 0.05);
    EXPECT_FALSE(s.drop_latency);
    EXPECT_EQ(s.seed, RobustVariantSpec(k, o).seed);
    if (k > 0) {
      EXPECT_NE(s.seed, RobustVariantSpec(k - 1, o).seed);
    }
  }
}

TEST(VariantsTest, BadOptionsAreOneLine) {
  EXPECT_EQ(CheckRobustOptions({.count = 0}).message(),
            "robust count: must be between 1 and 64, got 0");
  EXPECT_EQ(CheckRobustOptions({.count = 2, .quantile = 0}).message(),
            "robust quantile: must be in (0, 1], got 0");
  EXPECT_EQ(CheckRobustOptions({.count = 2, .spread = -1}).message(),
            "robust spread: must be between 0 and 2, got -1");
  EXPECT_TRUE(CheckRobustOptions({.count = 64, .quantile = 0.5}).ok());
}

TEST(RobustEvaluatorTest, QuantileRankIsNearestRank) {
  EXPECT_EQ(QuantileRank(8, 1), 7u);
  EXPECT_EQ(QuantileRank(8, 0.5), 3u);
  EXPECT_EQ(QuantileRank(8, 0.9), 7u);  // ceil(7.2) = 8th
  EXPECT_EQ(QuantileRank(8, 0.01), 0u);
  EXPECT_EQ(QuantileRank(1, 0.5), 0u);
}

TEST(RobustEvaluatorTest, ValueIsTheWorstOfTheVariantsByHand) {
  // a on d0 sends to x on d1 and to y on c0 (1 s each): per pair 3 s, one bus per device 4 s
  // (StepModelTest.OneBusPerDeviceSerialisesTransfersToTwoDestinations).
  auto base = std::make_shared<const Problem>(testing::Fork(ThreeDevices()));
  auto bus = std::make_shared<const Problem>(
      std::move(MakeVariant(*base, {.model = {.channels = Channels::kPerDevice}})).value());
  RobustEvaluator worst(base, {base, bus}, 1);
  const Placement p = OnDevices({0, 1, 2});
  EXPECT_DOUBLE_EQ(worst.Evaluate(p).value, 4);
  EXPECT_EQ(worst.evaluations(), 2);  // one per variant
  RobustEvaluator best_half(base, {base, bus}, 0.5);
  EXPECT_DOUBLE_EQ(best_half.Evaluate(p).value, 3);
  const RobustJudgement j = worst.Judge(p);
  EXPECT_EQ(j.values, (std::vector<double>{3, 4}));
  EXPECT_DOUBLE_EQ(j.median, 3.5);
  EXPECT_DOUBLE_EQ(j.worst, 4);
  EXPECT_TRUE(j.feasible);
  // All on d0: no transfer, 3 s on both.
  EXPECT_DOUBLE_EQ(worst.Evaluate(OnDevices({0, 0, 0})).value, 3);
}

TEST(RobustEvaluatorTest, ATimedEvaluationCountsEveryVariantAndTimesTheRankedOne) {
  const auto base = Layered();
  auto robust = MakeRobustEvaluator(base, {.count = 4, .quantile = 1, .seed = 4, .spread = 0.2});
  ASSERT_TRUE(robust.ok());
  auto variants = std::move(RobustVariants(*base, {.count = 4, .seed = 4, .spread = 0.2})).value();
  Rng rng(5);
  const Placement p = RandomPlacement(*base, rng);
  Timing timing;
  const Evaluation e = (*robust)->EvaluateTimed(p, &timing);
  EXPECT_EQ((*robust)->evaluations(), 4);
  EXPECT_EQ(e.value, (*robust)->Evaluate(p).value);
  // The timing is the worst variant's own run: its makespan is the value, its critical path the
  // simulator's.
  size_t worst = 0;
  std::vector<double> values;
  for (const auto& v : variants) values.push_back(SimulateStep(*v, p).evaluation.value);
  worst = static_cast<size_t>(std::max_element(values.begin(), values.end()) - values.begin());
  EXPECT_EQ(timing.makespan_s, e.value);
  StepSimulator sim(*variants[worst]);
  EXPECT_EQ(timing.critical_path, sim.CriticalPath(p));
}

TEST(RobustEvaluatorTest, ValueIsTheQuantileOfTheVariantsOwnValues) {
  const auto base = Layered();
  for (double q : {1.0, 0.5}) {
    auto robust = MakeRobustEvaluator(base, {.count = 6, .quantile = q, .seed = 4, .spread = 0.2});
    ASSERT_TRUE(robust.ok());
    auto variants =
        std::move(RobustVariants(*base, {.count = 6, .seed = 4, .spread = 0.2})).value();
    Rng rng(8);
    for (int i = 0; i < 10; ++i) {
      const Placement p = RandomPlacement(*base, rng);
      std::vector<double> values;
      for (const auto& v : variants) values.push_back(SimulateStep(*v, p).evaluation.value);
      std::sort(values.begin(), values.end());
      EXPECT_EQ((*robust)->Evaluate(p).value, values[q == 1 ? 5 : 2]);
      EXPECT_LE((*robust)->lower_bound(), values[q == 1 ? 5 : 2]);
    }
  }
}

TEST(RobustEvaluatorTest, IncrementalEqualsFullForEveryVariant) {
  // Moves of one to four ops from a base, some taken as the new base; EvaluateNear answers as
  // Evaluate does (value, feasibility, reason, devices), and with a cut-off it is given up on only
  // above it and never above the real value. Worst and median alike; forks answer the same.
  const auto base = Layered();
  for (double q : {1.0, 0.5}) {
    auto made = MakeRobustEvaluator(base, {.count = 4, .quantile = q, .seed = 11, .spread = 0.2});
    ASSERT_TRUE(made.ok());
    RobustEvaluator& near = **made;
    std::unique_ptr<Evaluator> full = near.Fork();
    ASSERT_NE(near.Incremental(), nullptr);
    Rng rng(21);
    Placement placement = RandomPlacement(*base, rng);
    near.SetBase(placement);
    double cutoff = full->Evaluate(placement).value;
    int given_up = 0, kept = 0;
    for (int step = 0; step < 200; ++step) {
      Placement moved = placement;
      const uint64_t count = 1 + rng.Below(4);
      for (uint64_t i = 0; i < count; ++i) {
        moved[OpId(static_cast<int32_t>(rng.Below(moved.size())))] =
            static_cast<DeviceId>(rng.Below(3));
      }
      const Evaluation a = near.EvaluateNear(moved);
      const Evaluation b = full->Evaluate(moved);
      ASSERT_EQ(a.value, b.value) << "q " << q << " step " << step;
      ASSERT_EQ(a.feasible, b.feasible);
      ASSERT_EQ(a.reason, b.reason);
      for (DeviceId d : a.devices.ids()) ASSERT_EQ(a.devices[d].busy_s, b.devices[d].busy_s);
      const Evaluation c = near.EvaluateNear(moved, cutoff);
      if (c.reason.starts_with("the robust value is more than")) {
        ASSERT_GT(b.value, cutoff);
        ASSERT_GT(c.value, cutoff);
        ASSERT_LE(c.value, b.value * (1 + 1e-12));
        ASSERT_FALSE(c.feasible);
        ++given_up;
      } else {
        ASSERT_EQ(c.value, b.value);
        ASSERT_EQ(c.feasible, b.feasible);
        ++kept;
      }
      if (step % 50 == 0) {
        EXPECT_FALSE(near.CriticalPath(moved).empty());
      }
      if (rng.Below(3) == 0) {
        placement = moved;
        near.SetBase(placement);
        cutoff = full->Evaluate(placement).value;
      }
    }
    EXPECT_GT(given_up, 0) << q;
    EXPECT_GT(kept, 0) << q;
  }
}

TEST(RobustEvaluatorTest, InfeasibleOnOneVariantIsInfeasible) {
  // a (d0) -> b (d1), a 50-byte tensor on devices of 40 bytes: every variant overflows d0, and
  // the robust evaluation says so with the first variant's reason.
  graph::GraphBuilder b("remote");
  const auto ia = b.AddOp(TimedOp("a", 1), {{50, -1}});
  const auto ib = b.AddOp(TimedOp("b", 1));
  b.AddEdge(ia, 0, ib);
  auto base = std::make_shared<const Problem>(Make(b, ThreeDevices(40)));
  auto robust = std::move(MakeRobustEvaluator(base, {.count = 2})).value();
  const Evaluation e = robust->Evaluate(OnDevices({0, 1}));
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, "variant 0: device d0: peak memory 50 B exceeds capacity 40 B by 10 B");
}

}  // namespace
}  // namespace dplace::sim
