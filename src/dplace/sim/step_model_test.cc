// The step model's variants (step_model.h): cases worked out by hand in the comments, and
// incremental runs against full runs under every model.
#include "dplace/sim/step_model.h"

#include <gtest/gtest.h>

#include "dplace/base/rng.h"
#include "dplace/graph/synthetic.h"
#include "dplace/graph/training.h"
#include "dplace/sim/step_sim.h"
#include "dplace/sim/test_problems.h"
#include "dplace/sim/variants.h"

namespace dplace::sim {
namespace {

using testing::Fork;
using testing::Make;
using testing::ThreeDevices;
using testing::TimedOp;

Problem Under(const Problem& base, Channels channels, LatencyMode latency = LatencyMode::kGap,
              bool drop_latency = false) {
  return std::move(MakeVariant(base, {.model = {.channels = channels, .latency = latency},
                                      .drop_latency = drop_latency}))
      .value();
}

// Two GPUs with links of 1 byte/s and 1 s latency: a 1-byte tensor takes 1 + 1 = 2 s.
std::shared_ptr<const hw::Cluster> TwoWithLatency() {
  hw::ClusterBuilder b("latency");
  b.AddDevice({.name = "d0", .kind = "gpu"});
  b.AddDevice({.name = "d1", .kind = "gpu"});
  b.SetDefaultLink({.bandwidth_bytes_per_s = 1, .latency_s = 1});
  return std::make_shared<const hw::Cluster>(std::move(b.Build()).value());
}

TEST(StepModelTest, NamesAndDefault) {
  EXPECT_EQ(StepModelName({}), "per_pair,gap");
  EXPECT_EQ(StepModelName({Channels::kPerDevice, LatencyMode::kArrival}), "per_device,arrival");
  EXPECT_EQ(Problem{}.step_model, StepModel{});
  auto spec = ParseVariantSpec("per_device,no_latency");
  ASSERT_TRUE(spec.ok());
  EXPECT_EQ(spec->model.channels, Channels::kPerDevice);
  EXPECT_EQ(spec->model.latency, LatencyMode::kGap);
  EXPECT_TRUE(spec->drop_latency);
  EXPECT_EQ(ParseVariantSpec("per_device,fast").status().message(),
            "'fast' is not per_pair, per_device, gap, arrival or no_latency");
}

TEST(StepModelTest, OneBusPerDeviceSerialisesTransfersToTwoDestinations) {
  // a on d0 sends t0 to x on d1 and t1 to y on c0, 1 s each. Per pair the two channels run side
  // by side: both transfers [1, 2], x and y [2, 3], makespan 3. One bus per device: t0 [1, 2],
  // t1 waits for the bus: [2, 3], y [3, 4], makespan 4.
  const Problem base = Fork(ThreeDevices());
  const Placement placement = OnDevices({0, 1, 2});
  StepResult pair = SimulateStep(base, placement, {.record_timeline = true});
  EXPECT_DOUBLE_EQ(pair.evaluation.value, 3);
  const Problem bus = Under(base, Channels::kPerDevice);
  StepResult one = SimulateStep(bus, placement, {.record_timeline = true});
  EXPECT_DOUBLE_EQ(one.evaluation.value, 4);
  ASSERT_EQ(one.timeline.transfers.size(), 2u);
  EXPECT_DOUBLE_EQ(one.timeline.transfers[1].start_s, 2);
  EXPECT_DOUBLE_EQ(one.timeline.transfers[1].end_s, 3);
  // y waited for its copy, which waited on the bus behind x's, which waited for a.
  StepSimulator sim(bus);
  EXPECT_EQ(sim.CriticalPath(placement), (std::vector<OpId>{OpId(2), OpId(0)}));
}

TEST(StepModelTest, ArrivalLatencyOverlapsBackToBackTransfers) {
  // a on d0 sends t0 to x and t1 to y, both on d1, over one channel; 1 byte/s, 1 s latency.
  // Gap: t0 holds the channel [1, 3], t1 [3, 5]; x [3, 4], y [5, 6]: 6.
  // Arrival: t0 holds it [1, 2] and arrives at 3; t1 holds it [2, 3] and arrives at 4; x [3, 4],
  // y [4, 5]: 5. No latency at all: t0 [1, 2], t1 [2, 3], x [2, 3], y [3, 4]: 4.
  const Problem base = Fork(TwoWithLatency());
  const Placement placement = OnDevices({0, 1, 1});
  EXPECT_DOUBLE_EQ(SimulateStep(base, placement).evaluation.value, 6);
  const Problem arrival = Under(base, Channels::kPerPair, LatencyMode::kArrival);
  StepResult r = SimulateStep(arrival, placement, {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.value, 5);
  ASSERT_EQ(r.timeline.transfers.size(), 2u);
  EXPECT_DOUBLE_EQ(r.timeline.transfers[1].start_s, 2);
  EXPECT_DOUBLE_EQ(r.timeline.transfers[1].end_s, 4);
  const Problem none = Under(base, Channels::kPerPair, LatencyMode::kGap, /*drop_latency=*/true);
  EXPECT_DOUBLE_EQ(SimulateStep(none, placement).evaluation.value, 4);
  // y started when t1 arrived; t1 waited on the channel behind t0, which waited for a.
  StepSimulator sim(arrival);
  EXPECT_EQ(sim.CriticalPath(placement), (std::vector<OpId>{OpId(2), OpId(0)}));
  // The variants' lower bounds hold.
  for (const Problem* p : {&arrival, &none}) {
    EXPECT_LE(p->lower_bound, SimulateStep(*p, placement).evaluation.value);
    EXPECT_LE(p->lower_bound, SimulateStep(*p, OnDevices({0, 0, 0})).evaluation.value);
  }
}

TEST(StepModelTest, ArrivalKeepsTheCopyFromItsStartAndTheSourceUntilItArrives) {
  // a (d0) -> b (d1), 50 bytes at 1 byte/s and 1 s latency, arrival: the channel is held [1, 51],
  // the tensor arrives at 52, b runs [52, 53]. d0 holds a's output until it arrived (52); d1 holds
  // the copy from 1 to 53.
  graph::GraphBuilder b("remote");
  const auto ia = b.AddOp(TimedOp("a", 1), {{50, -1}});
  const auto ib = b.AddOp(TimedOp("b", 1));
  b.AddEdge(ia, 0, ib);
  const Problem p = Under(Make(b, TwoWithLatency()), Channels::kPerPair, LatencyMode::kArrival);
  StepResult r = SimulateStep(p, OnDevices({0, 1}), {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.value, 53);
  EXPECT_DOUBLE_EQ(r.evaluation.devices[DeviceId(1)].peak_memory_bytes, 50);
  double freed_s = -1;  // when d0 is empty again
  for (const MemorySample& m : r.timeline.memory) {
    if (m.device == DeviceId(0) && m.bytes == 0 && m.time_s > 0) freed_s = m.time_s;
  }
  EXPECT_DOUBLE_EQ(freed_s, 52);
}

// A training step of a synthetic graph on four GPUs and a CPU, memory tight enough that some
// placements overflow (as StepSimTest.IncrementalRunsEqualFullRuns).
Problem Training() { return testing::TightTraining(200, 5, 3.5e8, 2e-5); }

TEST(StepModelTest, IncrementalRunsEqualFullRunsUnderEveryModel) {
  // A random walk of moves of one to five ops, some taken as the new base, under each of the four
  // models with noise: every RunNear answer is Run's, bit for bit; a run given up on is above the
  // cut-off and below the real value; the critical path leaves RunNear exact.
  const Problem base = Training();
  for (int k = 0; k < 4; ++k) {
    const Problem p =
        std::move(MakeVariant(base, RobustVariantSpec(k, {.count = 4, .spread = 0.2}))).value();
    const auto n = static_cast<size_t>(p.num_ops());
    Rng rng(17 + static_cast<uint64_t>(k));
    Placement placement(n);
    for (auto& d : placement) d = static_cast<DeviceId>(rng.Below(4));
    StepSimulator incremental(p), full(p);
    incremental.SetBase(placement);
    double cutoff = full.Makespan(placement);
    int feasible = 0, infeasible = 0, given_up = 0;
    for (int step = 0; step < 150; ++step) {
      Placement moved = placement;
      const uint64_t count = 1 + rng.Below(5);
      for (uint64_t i = 0; i < count; ++i) {
        moved[OpId(static_cast<int32_t>(rng.Below(n)))] = static_cast<DeviceId>(rng.Below(5));
      }
      const Evaluation a = incremental.RunNear(moved).evaluation;
      const Evaluation b = full.Run(moved).evaluation;
      ASSERT_EQ(a.value, b.value) << "model " << k << " step " << step;
      ASSERT_EQ(a.feasible, b.feasible) << "model " << k << " step " << step;
      ASSERT_EQ(a.reason, b.reason) << "model " << k << " step " << step;
      for (DeviceId d : a.devices.ids()) {
        ASSERT_EQ(a.devices[d].busy_s, b.devices[d].busy_s);
        ASSERT_EQ(a.devices[d].peak_memory_bytes, b.devices[d].peak_memory_bytes);
      }
      (a.feasible ? feasible : infeasible)++;
      const Evaluation c = incremental.RunNear(moved, cutoff).evaluation;
      if (c.value != b.value || c.feasible != b.feasible) {
        ASSERT_GT(b.value, cutoff);
        ASSERT_GT(c.value, cutoff);
        ASSERT_LE(c.value, b.value * (1 + 1e-12));
        ++given_up;
      }
      if (step % 37 == 0) incremental.CriticalPath(moved);
      if (rng.Below(4) == 0) {
        placement = moved;
        incremental.SetBase(placement);
        cutoff = full.Makespan(placement);
      }
    }
    EXPECT_GT(feasible, 0) << "model " << k;
    EXPECT_GT(infeasible, 0) << "model " << k;
    EXPECT_GT(given_up, 0) << "model " << k;
  }
}

}  // namespace
}  // namespace dplace::sim
