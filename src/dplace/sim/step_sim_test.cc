// Simulator cases whose answers are worked out by hand in the comments.
#include "dplace/sim/step_sim.h"

#include <gtest/gtest.h>

#include "dplace/base/rng.h"
#include "dplace/graph/synthetic.h"
#include "dplace/graph/training.h"
#include "dplace/sim/pipeline_sim.h"
#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

using testing::Make;
using testing::ThreeDevices;
using testing::TimedOp;

// a (1 s) has outputs t0 -> x and t1 -> y (1 s each), 1 byte each: ops a = 0, x = 1, y = 2.
Problem Contention() {
  graph::GraphBuilder b("contention");
  const auto a = b.AddOp(TimedOp("a", 1), {{1, -1}, {1, -1}});
  const auto x = b.AddOp(TimedOp("x", 1));
  const auto y = b.AddOp(TimedOp("y", 1));
  b.AddEdge(a, 0, x);
  b.AddEdge(a, 1, y);
  return Make(b, ThreeDevices());
}

TEST(StepSimTest, ChainAcrossTwoDevices) {
  // a (1 s on d0) -> b (2 s on d1); the 1.5-byte tensor takes 1.5 s: 1 + 1.5 + 2 = 4.5.
  graph::GraphBuilder b("chain");
  const auto a = b.AddOp(TimedOp("a", 1), {{1.5, -1}});
  const auto c = b.AddOp(TimedOp("b", 2));
  b.AddEdge(a, 0, c);
  Problem p = Make(b, ThreeDevices());
  StepResult r = SimulateStep(p, sim::OnDevices({0, 1}), {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.value, 4.5);
  ASSERT_EQ(r.timeline.transfers.size(), 1u);
  EXPECT_DOUBLE_EQ(r.timeline.transfers[0].start_s, 1);
  EXPECT_DOUBLE_EQ(r.timeline.transfers[0].end_s, 2.5);
  EXPECT_DOUBLE_EQ(r.evaluation.devices[DeviceId(1)].busy_s, 2);
  EXPECT_TRUE(r.evaluation.feasible);
  // Same device: no transfer, 1 + 2 = 3.
  EXPECT_DOUBLE_EQ(SimulateStep(p, sim::OnDevices({0, 0})).evaluation.value, 3);
}

TEST(StepSimTest, ChannelCarriesOneTransferAtATime) {
  // a (1 s, d0) has outputs t0 -> x and t1 -> y, 1 s each, both x, y (1 s) on d1.
  // t0 occupies d0->d1 over [1, 2], t1 waits: [2, 3]. x runs [2, 3], y [3, 4]. Makespan 4.
  Problem p = Contention();
  StepResult r = SimulateStep(p, sim::OnDevices({0, 1, 1}), {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.value, 4);
  ASSERT_EQ(r.timeline.transfers.size(), 2u);
  EXPECT_DOUBLE_EQ(r.timeline.transfers[1].start_s, 2);
}

TEST(StepSimTest, TensorIsSentOncePerDestinationDevice) {
  // a -> {x, y}, both on d1: one transfer of a's output, not two.
  graph::GraphBuilder b("fanout");
  const auto a = b.AddOp(TimedOp("a", 1), {{1, -1}});
  const auto x = b.AddOp(TimedOp("x", 1));
  const auto y = b.AddOp(TimedOp("y", 1));
  b.AddEdge(a, 0, x);
  b.AddEdge(a, 0, y);
  Problem p = Make(b, ThreeDevices());
  StepResult r = SimulateStep(p, sim::OnDevices({0, 1, 1}), {.record_timeline = true});
  EXPECT_EQ(r.timeline.transfers.size(), 1u);
  EXPECT_DOUBLE_EQ(r.evaluation.value, 4);  // a [0,1], transfer [1,2], x [2,3], y [3,4]
}

TEST(StepSimTest, ReadyOpsRunInReadyOrderThenById) {
  // z (id 0, 3 s) and w (id 1, 1 s) are both ready at 0 on d0: z first, so w ends at 4.
  // v (id 2) is ready at 0 on d0 too but has a higher id than w: order z, w, v.
  graph::GraphBuilder b("ties");
  b.AddOp(TimedOp("z", 3));
  b.AddOp(TimedOp("w", 1));
  b.AddOp(TimedOp("v", 2));
  Problem p = Make(b, ThreeDevices());
  StepResult r = SimulateStep(p, sim::OnDevices({0, 0, 0}), {.record_timeline = true});
  ASSERT_EQ(r.timeline.ops.size(), 3u);
  EXPECT_EQ(r.timeline.ops[0].op, 0);
  EXPECT_EQ(r.timeline.ops[1].op, 1);
  EXPECT_DOUBLE_EQ(r.timeline.ops[1].end_s, 4);
  EXPECT_EQ(r.timeline.ops[2].op, 2);
  EXPECT_DOUBLE_EQ(r.evaluation.value, 6);
}

TEST(StepSimTest, LocalMemoryPeak) {
  // d0 holds a's 100 parameter bytes. a starts: +50 output -> 150. b starts: +5 scratch +10 output
  // -> 165 (peak). b ends: -5 scratch, a's output freed -> 110 (b's output is kept: no consumer).
  graph::GraphBuilder b("mem");
  graph::Op a = TimedOp("a", 1);
  a.param_bytes = 100;
  graph::Op c = TimedOp("b", 1);
  c.scratch_bytes = 5;
  const auto ia = b.AddOp(a, {{50, -1}});
  const auto ib = b.AddOp(c, {{10, -1}});
  b.AddEdge(ia, 0, ib);
  Problem p = Make(b, ThreeDevices());
  StepResult r = SimulateStep(p, sim::OnDevices({0, 0}), {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.devices[DeviceId(0)].peak_memory_bytes, 165);
  EXPECT_DOUBLE_EQ(r.timeline.memory.back().bytes, 110);
}

TEST(StepSimTest, AViewAllocatesNothingAndKeepsItsBase) {
  // a (100 B) -> v (a view of it) -> c (10 B), all on d0. a: 100. v: +0. c starts: 110 (peak);
  // c ends: v is done, and with it a's output: 10 left (c's output, no consumer). Were v a copy,
  // the peak would be 200 as v started.
  graph::GraphBuilder b("view");
  const auto ia = b.AddOp(TimedOp("a", 1), {{100, -1}});
  const auto iv = b.AddOp(TimedOp("v", 1), {{.bytes = 100, .view = true, .view_of_op = ia}});
  const auto ic = b.AddOp(TimedOp("c", 1), {{10, -1}});
  b.AddEdge(ia, 0, iv);
  b.AddEdge(iv, 0, ic);
  Problem p = Make(b, ThreeDevices());
  StepResult r = SimulateStep(p, sim::OnDevices({0, 0, 0}), {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.devices[DeviceId(0)].peak_memory_bytes, 110);
  EXPECT_DOUBLE_EQ(r.timeline.memory.back().bytes, 10);
  // v's copy sent to d1 is a real tensor there; a's output lives on d0 until the transfer ends.
  StepResult sent = SimulateStep(p, sim::OnDevices({0, 0, 1}), {.record_timeline = true});
  EXPECT_DOUBLE_EQ(sent.evaluation.devices[DeviceId(0)].peak_memory_bytes, 100);
  EXPECT_DOUBLE_EQ(sent.evaluation.devices[DeviceId(1)].peak_memory_bytes, 110);
}

// A training-mode dropout ("drop", the loss here) keeps 8 bytes of mask on a GPU and 32 bytes of
// noise on a CPU (Op::saved_bytes_cpu), from the op to its backward: the step's peak and the
// pipeline's per-micro-batch bytes are what the device's kind keeps; a copy sent from the CPU to a
// GPU's backward holds the CPU's 32.
TEST(StepSimTest, WhatBackwardKeepsIsSizedByTheDevicesKind) {
  graph::GraphBuilder f("dropout");
  graph::Op drop = TimedOp("drop", 1);
  drop.saves_output = false;
  drop.saved_bytes = 8;
  drop.saved_bytes_cpu = 32;
  f.AddOp(drop, {{0, -1}});
  auto g = graph::ExpandTraining(std::move(f.Build()).value(), {.colocate = false});
  ASSERT_TRUE(g.ok()) << g.status().message();
  Problem p = std::move(MakeProblem(std::make_shared<const graph::Graph>(*std::move(g)),
                                    ThreeDevices(), Objective::kStep, cost::RooflineCostModel()))
                  .value();
  auto peak = [&](const Placement& placement, int d) {
    return SimulateStep(p, placement).evaluation.devices[DeviceId(d)].peak_memory_bytes;
  };
  EXPECT_DOUBLE_EQ(peak(OnDevices({0, 0}), 0), 8);
  EXPECT_DOUBLE_EQ(peak(OnDevices({2, 2}), 2), 32);
  EXPECT_DOUBLE_EQ(peak(OnDevices({2, 0}), 0), 32);
  EXPECT_DOUBLE_EQ(peak(OnDevices({0, 2}), 2), 8);
  EXPECT_DOUBLE_EQ(HeldPerMicrobatch(p, sim::OnDevices({0, 0}))[DeviceId(0)], 8);
  EXPECT_DOUBLE_EQ(HeldPerMicrobatch(p, sim::OnDevices({2, 2}))[DeviceId(2)], 32);
}

TEST(StepSimTest, RemoteCopyMemoryAndInfeasibility) {
  // a (d0) -> b (d1), 50-byte tensor. d0: 50 until the transfer ends. d1: the copy (50) from the
  // transfer start until b ends. Capacity 40: infeasible, reported on d0, over by 10 B.
  graph::GraphBuilder b("remote");
  const auto ia = b.AddOp(TimedOp("a", 1), {{50, -1}});
  const auto ib = b.AddOp(TimedOp("b", 1));
  b.AddEdge(ia, 0, ib);
  Problem p = Make(b, ThreeDevices(40));
  StepResult r = SimulateStep(p, sim::OnDevices({0, 1}), {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.devices[DeviceId(0)].peak_memory_bytes, 50);
  EXPECT_DOUBLE_EQ(r.evaluation.devices[DeviceId(1)].peak_memory_bytes, 50);
  EXPECT_FALSE(r.evaluation.feasible);
  EXPECT_EQ(r.evaluation.reason, "device d0: peak memory 50 B exceeds capacity 40 B by 10 B");
  EXPECT_DOUBLE_EQ(r.evaluation.value, 1 + 50 + 1);
  for (const auto& s : r.timeline.memory) EXPECT_GE(s.bytes, 0);
  EXPECT_DOUBLE_EQ(r.timeline.memory.back().bytes, 0);
}

TEST(StepSimTest, ConstraintViolationsAreInfeasibleNotErrors) {
  graph::GraphBuilder b("kinds");
  graph::Op a = TimedOp("a", 1);
  a.device_kinds = {"gpu"};
  b.AddOp(a);
  Problem p = Make(b, ThreeDevices());
  Evaluation e = SimulateStep(p, sim::OnDevices({2})).evaluation;
  EXPECT_FALSE(e.feasible);
  EXPECT_EQ(e.reason, "op 'a' may not run on c0 (kind cpu)");
}

TEST(StepSimTest, LowerBoundHoldsOnSyntheticGraphs) {
  auto g =
      std::make_shared<const graph::Graph>(graph::MakeLayeredGraph({.num_ops = 500, .width = 8}));
  Problem p = std::move(MakeProblem(g, ThreeDevices(), Objective::kStep, cost::RooflineCostModel()))
                  .value();
  StepSimulator sim(p);
  Placement placement(500);
  for (OpId i : placement.ids()) placement[i] = sim::DeviceId(i.value() % 2);
  const double split = sim.Makespan(placement);
  std::fill(placement.begin(), placement.end(), DeviceId(0));
  const double single = sim.Makespan(placement);
  EXPECT_GE(split, p.lower_bound);
  EXPECT_GE(single, p.lower_bound);
  // On one device with no transfers the step is exactly the sum of the op times.
  double sum = 0;
  for (OpId i{0}; i < 500; ++i) sum += p.costs.OpTime(i, sim::DeviceId(0));
  EXPECT_NEAR(single, sum, 1e-9 * sum);
}

TEST(StepSimTest, IncrementalRunsEqualFullRuns) {
  // A training step of a synthetic graph on four GPUs and a CPU, with memory tight enough that
  // some placements overflow. A random walk of moves of one to five ops, some of them taken as the
  // new base: every RunNear answer is Run's, bit for bit, memory and feasibility included.
  Problem p = testing::TightTraining(300, 3, 5.3e8, 1e-5);
  const auto n = static_cast<size_t>(p.num_ops());
  Rng rng(11);
  Placement base(n);
  for (auto& d : base) d = static_cast<DeviceId>(rng.Below(4));
  StepSimulator incremental(p), full(p);
  incremental.SetBase(base);
  // Runs that may give up above the base's step time, as a search that takes only improvements.
  double cutoff = full.Makespan(base);
  int feasible = 0, infeasible = 0, given_up = 0;
  for (int step = 0; step < 400; ++step) {
    Placement moved = base;
    const uint64_t count = 1 + rng.Below(5);
    for (uint64_t k = 0; k < count; ++k) {
      moved[OpId(static_cast<int32_t>(rng.Below(n)))] = static_cast<DeviceId>(rng.Below(5));
    }
    const Evaluation a = incremental.RunNear(moved).evaluation;
    const Evaluation b = full.Run(moved).evaluation;
    ASSERT_EQ(a.value, b.value) << "step " << step;
    ASSERT_EQ(a.feasible, b.feasible) << "step " << step;
    ASSERT_EQ(a.reason, b.reason) << "step " << step;
    for (DeviceId d : a.devices.ids()) {
      ASSERT_EQ(a.devices[d].ops, b.devices[d].ops);
      ASSERT_EQ(a.devices[d].busy_s, b.devices[d].busy_s);
      ASSERT_EQ(a.devices[d].peak_memory_bytes, b.devices[d].peak_memory_bytes);
    }
    (a.feasible ? feasible : infeasible)++;
    // Given up on: infeasible, with a value above the cut-off that bounds the real one.
    const Evaluation c = incremental.RunNear(moved, cutoff).evaluation;
    if (c.value != b.value || c.feasible != b.feasible) {
      ASSERT_GT(b.value, cutoff) << "step " << step;
      ASSERT_FALSE(c.feasible) << "step " << step;
      ASSERT_GT(c.value, cutoff) << "step " << step;
      ASSERT_LE(c.value, b.value * (1 + 1e-12)) << "step " << step;
      ++given_up;
    }
    if (rng.Below(4) == 0) {
      base = moved;
      incremental.SetBase(base);
      cutoff = full.Makespan(base);
    }
  }
  // Both kinds of answer were compared, and some runs were given up on.
  EXPECT_GT(feasible, 0);
  EXPECT_GT(infeasible, 0);
  EXPECT_GT(given_up, 0);
  // The base itself, after all those moves.
  EXPECT_EQ(incremental.RunNear(base).evaluation.value, full.Makespan(base));
}

TEST(StepSimTest, CriticalPathFollowsWhatEachOpWaitedFor) {
  // y (4 s, d1) holds d1 while a (1 s, d0) sends its 1-byte tensor to b (1 s transfer): b is ready
  // at 2 but waits for the device until 4, runs [4, 6], then c [6, 7]. The step waits for c, b,
  // then y (the device), not for a.
  graph::GraphBuilder b("waits");
  const auto y = b.AddOp(TimedOp("y", 4, 4));
  const auto a = b.AddOp(TimedOp("a", 1), {{1, -1}});
  const auto x = b.AddOp(TimedOp("b", 2), {{1, -1}});
  const auto c = b.AddOp(TimedOp("c", 1));
  b.AddEdge(a, 0, x);
  b.AddEdge(x, 0, c);
  Problem p = Make(b, ThreeDevices());
  StepSimulator sim(p);
  EXPECT_EQ(sim.CriticalPath(sim::OnDevices({1, 0, 1, 1})), (std::vector<OpId>{c, x, y}));
  // With y on the CPU (4 s too), b starts when the transfer ends: c, b, then a through it.
  EXPECT_EQ(sim.CriticalPath(sim::OnDevices({2, 0, 1, 1})), (std::vector<OpId>{c, x, a}));
  // A timed run gives the same path in one simulation, with each op's start and end.
  Timing timing;
  const Evaluation e = sim.RunTimed(sim::OnDevices({1, 0, 1, 1}), &timing);
  EXPECT_EQ(timing.critical_path, (std::vector<OpId>{c, x, y}));
  EXPECT_DOUBLE_EQ(e.value, 7);
  EXPECT_DOUBLE_EQ(timing.makespan_s, 7);
  EXPECT_DOUBLE_EQ(timing.start_s[x], 4);
  EXPECT_DOUBLE_EQ(timing.end_s[x], 6);
  EXPECT_DOUBLE_EQ(timing.end_s[a], 1);
  // An evaluator of the step times its runs the same way and counts each as one evaluation.
  auto evaluator = testing::EvaluatorOf(p);
  Timing through;
  EXPECT_DOUBLE_EQ(evaluator->EvaluateTimed(sim::OnDevices({1, 0, 1, 1}), &through).value, 7);
  EXPECT_EQ(through.critical_path, timing.critical_path);
  EXPECT_EQ(evaluator->evaluations(), 1);
}

TEST(StepSimTest, CriticalPathFollowsTheChannelQueue) {
  // As in ChannelCarriesOneTransferAtATime: y's input waited on the channel behind x's, which
  // waited for a; y started when its copy arrived: y, then a.
  Problem p = Contention();
  const OpId a{0}, x{1}, y{2};
  StepSimulator sim(p);
  EXPECT_EQ(sim.CriticalPath(sim::OnDevices({0, 1, 1})), (std::vector<OpId>{y, a}));
  // The path does not disturb incremental runs: a base set before still answers exactly.
  sim.SetBase(sim::OnDevices({0, 1, 1}));
  EXPECT_EQ(sim.CriticalPath(sim::OnDevices({0, 0, 0})), (std::vector<OpId>{y, x, a}));
  EXPECT_DOUBLE_EQ(sim.RunNear(sim::OnDevices({0, 1, 0})).evaluation.value,
                   SimulateStep(p, sim::OnDevices({0, 1, 0})).evaluation.value);
}

// Eager runtime: a (id 0, 3 s) on d1 feeds c (id 2); b (id 1), c and d (id 3), 1 s each, on d0;
// the tensor is empty, so it arrives as a ends. A graph executor runs d while c waits: b [0,1],
// d [1,2], c [3,4], step 4. Eager PyTorch runs d0's ops in program order: b [0,1], c waits for a
// and runs [3,4], d only then [4,5], step 5.
TEST(StepSimTest, EagerDeviceRunsItsOpsInProgramOrder) {
  graph::GraphBuilder b("program_order");
  const auto a = b.AddOp(TimedOp("a", 3), {{0, -1}});
  b.AddOp(TimedOp("b", 1));
  const auto c = b.AddOp(TimedOp("c", 1));
  b.AddOp(TimedOp("d", 1));
  b.AddEdge(a, 0, c);
  Problem p = Make(b, ThreeDevices());
  const Placement placement = OnDevices({1, 0, 0, 0});
  EXPECT_DOUBLE_EQ(SimulateStep(p, placement).evaluation.value, 4);
  p.step_model.issue = Issue::kProgramOrder;  // ops of no module: no module rule
  StepResult r = SimulateStep(p, placement, {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.value, 5);
  ASSERT_EQ(r.timeline.ops.size(), 4u);
  EXPECT_EQ(r.timeline.ops.back().op, 3);
  EXPECT_DOUBLE_EQ(r.timeline.ops.back().start_s, 4);
  // A search's incremental runs give what full runs give.
  StepSimulator sim(p);
  sim.SetBase(OnDevices({0, 0, 0, 0}));
  EXPECT_DOUBLE_EQ(sim.RunNear(placement).evaluation.value, 5);
  EXPECT_DOUBLE_EQ(sim.RunNear(OnDevices({0, 0, 0, 0})).evaluation.value, 6);
}

// Eager runtime: x (id 0, 2 s) on d0, h (id 1, 2 s on a CPU) on c0, y (id 2, 1 s) on d1, no
// edges. x is issued before h and runs beside it [0,2]; h runs on the issuing thread [0,2], so
// y, later in the program, starts only as h ends: [2,3], step 3 (a graph executor: 2).
TEST(StepSimTest, EagerCpuOpsHoldUpTheOpsIssuedAfterThem) {
  graph::GraphBuilder b("host");
  b.AddOp(TimedOp("x", 2));
  b.AddOp(TimedOp("h", 2, 2));
  b.AddOp(TimedOp("y", 1));
  Problem p = Make(b, ThreeDevices());
  const Placement placement = OnDevices({0, 2, 1});
  EXPECT_DOUBLE_EQ(SimulateStep(p, placement).evaluation.value, 2);
  p.step_model.issue = Issue::kProgramOrder;  // ops of no module: no module rule
  StepResult r = SimulateStep(p, placement, {.record_timeline = true});
  EXPECT_DOUBLE_EQ(r.evaluation.value, 3);
  for (const auto& op : r.timeline.ops) {
    EXPECT_DOUBLE_EQ(op.start_s, op.op == 2 ? 2 : 0) << op.op;
  }
}

// The module rule of a device map: emb -> blk (a -> b, then blk's own residual add of a's and
// b's outputs) -> head (two ops of one leaf module); ops 0 .. 5.
TEST(StepSimTest, EagerPlansAreDeviceMapsThatAccelerateRuns) {
  graph::GraphBuilder b("modules");
  const auto emb = b.AddOp(TimedOp("/emb/Gather", 1), {{1, -1}});
  const auto a = b.AddOp(TimedOp("/blk/a/MatMul", 1), {{1, -1}});
  const auto c = b.AddOp(TimedOp("/blk/b/MatMul", 1), {{1, -1}});
  const auto add = b.AddOp(TimedOp("/blk/Add", 1), {{1, -1}});
  const auto head = b.AddOp(TimedOp("/head/MatMul", 1), {{1, -1}});
  const auto bias = b.AddOp(TimedOp("/head/Add", 1), {{1, -1}});
  b.AddEdge(emb, 0, a);
  b.AddEdge(a, 0, c);
  b.AddEdge(a, 0, add);
  b.AddEdge(c, 0, add);
  b.AddEdge(add, 0, head);
  b.AddEdge(head, 0, bias);
  Problem p = Make(b, ThreeDevices());
  const Placement blk_apart = OnDevices({0, 0, 1, 0, 0, 0});
  EXPECT_TRUE(SimulateStep(p, blk_apart).evaluation.feasible);  // a graph executor runs it
  UseEagerRuntime(p);
  // blk is split, so its add runs where its first input (a's output) is, and b's is on d1.
  const Evaluation split = SimulateStep(p, blk_apart).evaluation;
  EXPECT_FALSE(split.feasible);
  EXPECT_EQ(split.reason,
            "op '/blk/Add' of module 'blk' (split over devices) reads '/blk/b/MatMul' from d1 on "
            "d0: a device map moves tensors only into a module mapped whole");
  // blk's leaves on d1: blk is mapped whole, its add runs there too whatever the placement says,
  // its input moves there at its entry and its output to head at head's: 1 + 1 + 3 + 1 + 2 = 8
  // (1-byte tensors, 1 byte/s).
  const Placement blk_on_d1 = OnDevices({0, 1, 1, 0, 0, 0});
  EXPECT_EQ(Dispatched(p, blk_on_d1), OnDevices({0, 1, 1, 1, 0, 0}));
  const Evaluation whole = SimulateStep(p, blk_on_d1).evaluation;
  EXPECT_TRUE(whole.feasible) << whole.reason;
  EXPECT_DOUBLE_EQ(whole.value, 8);
  // A module with no module inside it is never split.
  EXPECT_EQ(SimulateStep(p, OnDevices({0, 0, 0, 0, 0, 1})).evaluation.reason,
            "module 'head' is split over d0 and d1: a device map runs a module with its "
            "parameters on one device");
}

}  // namespace
}  // namespace dplace::sim
