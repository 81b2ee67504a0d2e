// Pipeline schedules on a two-stage training split, worked out by hand.
#include "dplace/sim/pipeline_sim.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "dplace/sim/evaluator.h"
#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

// Stage d0: f0 (forward, 1 s) and b0 (backward, 2 s); stage d1: f1 (1 s), b1 (2 s).
// f0 -> f1 -> b1 -> b0, f0 -> b0. Every tensor holds 5 bytes and moves in 0 s.
Problem TwoStages(double scale = 1) {
  graph::GraphBuilder b("two_stages");
  auto op = [](const std::string& name, double s, graph::OpKind kind) {
    graph::Op o = testing::TimedOp(name, s);
    o.kind = kind;
    return o;
  };
  const auto f0 = b.AddOp(op("f0", scale, graph::OpKind::kForward), {{5, 0}});
  const auto f1 = b.AddOp(op("f1", scale, graph::OpKind::kForward), {{5, 0}});
  const auto b1 = b.AddOp(op("b1", 2 * scale, graph::OpKind::kBackward), {{5, 0}});
  const auto b0 = b.AddOp(op("b0", 2 * scale, graph::OpKind::kBackward), {{5, 0}});
  b.AddEdge(f0, 0, f1);
  b.AddEdge(f1, 0, b1);
  b.AddEdge(b1, 0, b0);
  b.AddEdge(f0, 0, b0);
  return testing::Make(b, testing::ThreeDevices());
}

TEST(PipelineSimTest, GPipe) {
  // d0: F0 [0,1] F1 [1,2]; d1: F0 [1,2] F1 [2,3] B1 [3,5] B0 [5,7]; d0: B1 [5,7] B0 [7,9].
  Problem p = TwoStages();
  auto r = SimulatePipeline(p, sim::OnDevices({0, 1, 1, 0}), PipelineSchedule::kGPipe, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->makespan_s, 9);
  EXPECT_DOUBLE_EQ(r->time_per_microbatch_s, 4.5);
  EXPECT_NEAR(r->bubble_fraction, 1.0 / 3, 1e-12);  // 1 - 12 / (2 * 9)
  ASSERT_EQ(r->stages.size(), 2u);
  EXPECT_EQ(r->stages[0].device, 0);
  EXPECT_EQ(r->stages[1].peak_in_flight, 2);
  // Two micro-batches of what d1 holds for each: f1's 5 bytes (b1 keeps them) and the 5 it
  // received from f0.
  EXPECT_DOUBLE_EQ(r->stages[1].held_per_microbatch_bytes, 10);
  EXPECT_DOUBLE_EQ(r->stages[1].peak_memory_bytes, 20);
  EXPECT_EQ(r->tasks.size(), 8u);
}

TEST(PipelineSimTest, OneForwardOneBackward) {
  // d0 runs F0 F1 B0 B1, d1 runs F0 B0 F1 B1: d1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7];
  // d0: F0 [0,1] F1 [1,2] B0 [4,6] B1 [7,9]. d1 never holds two micro-batches.
  Problem p = TwoStages();
  auto r = SimulatePipeline(p, sim::OnDevices({0, 1, 1, 0}), PipelineSchedule::k1F1B, 2);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->makespan_s, 9);
  EXPECT_EQ(r->stages[1].peak_in_flight, 1);
  EXPECT_EQ(r->stages[0].peak_in_flight, 2);
  EXPECT_TRUE(r->feasible);
}

TEST(PipelineSimTest, OneForwardOneBackwardCountsWhatItsTraceShows) {
  // As above with 0.033-s forwards, 0.066-s backwards and 5 micro-batches. d1 runs F_m then B_m,
  // one micro-batch at a time; d0 holds at most 2 (1F1B's warm-up depth on the first of two
  // stages): each of its forwards after the warm-up starts at the very instant a backward ends,
  // which frees that micro-batch first. None of these instants is exact in binary: a forward's
  // start recomputed as its end less its duration fell before that backward's end and counted 3.
  Problem p = TwoStages(0.033);
  auto r = SimulatePipeline(p, sim::OnDevices({0, 1, 1, 0}), PipelineSchedule::k1F1B, 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->stages[0].peak_in_flight, 2);
  EXPECT_EQ(r->stages[1].peak_in_flight, 1);
  EXPECT_DOUBLE_EQ(r->stages[0].peak_memory_bytes, 10);
  // The trace agrees: on d0, no forward starts before the backward two micro-batches back ends.
  std::map<std::pair<int, bool>, const PipelineTask*> d0;
  for (const PipelineTask& t : r->tasks) {
    if (t.device == 0) d0[{t.microbatch, t.kind != TaskKind::kForward}] = &t;
  }
  for (int m = 2; m < 5; ++m) {
    const PipelineTask* forward = d0[std::make_pair(m, false)];
    const PipelineTask* backward = d0[std::make_pair(m - 2, true)];
    EXPECT_GE(forward->start_s, backward->end_s);
  }
}

// a (1 s) -> c (3 s), 30-byte outputs, on two devices of `memory` bytes each.
Problem InferencePair(double memory) {
  graph::GraphBuilder b("inference");
  const auto a = b.AddOp(testing::TimedOp("a", 1), {{30, 0}});
  const auto c = b.AddOp(testing::TimedOp("c", 3), {{30, 0}});
  b.AddEdge(a, 0, c);
  return testing::Make(b, testing::ThreeDevices(memory));
}

TEST(PipelineSimTest, MemoryOverflowIsReported) {
  // Inference: d0 runs F0..F3 back to back; each holds 30 bytes only while it runs, so one is in
  // flight at a time: fits in 50 bytes, not in 25.
  Problem roomy = InferencePair(50);
  auto r = SimulatePipeline(roomy, sim::OnDevices({0, 1}), PipelineSchedule::kGPipe, 4);
  ASSERT_TRUE(r.ok());
  EXPECT_DOUBLE_EQ(r->makespan_s, 1 + 4 * 3);
  EXPECT_EQ(r->stages[0].peak_in_flight, 1);
  EXPECT_TRUE(r->feasible) << r->reason;
  Problem p = InferencePair(25);
  auto tight = SimulatePipeline(p, sim::OnDevices({0, 1}), PipelineSchedule::kGPipe, 4);
  ASSERT_TRUE(tight.ok());
  EXPECT_FALSE(tight->feasible);
  EXPECT_NE(tight->reason.find("1 micro-batches in flight exceeds capacity 25 B"),
            std::string::npos)
      << tight->reason;
  EXPECT_FALSE(SimulatePipeline(p, sim::OnDevices({0, 1}), PipelineSchedule::kGPipe, 0).ok());
}

// A forward graph a -> v (a view of a's output) -> b -> c (the loss), expanded into a training
// step. a: 100 bytes out, 10 bytes of weights; v: views a's output; b keeps its input (v), not
// its 200-byte output, and 7 bytes of its insides (saved_bytes), 20 bytes of weights; c keeps
// nothing of b, 4 bytes out. Stage d0 = a, v; stage d1 = b, c (each with its backward and
// update ops).
Problem TrainingStages() {
  graph::GraphBuilder f("held");
  graph::Op a = testing::TimedOp("a", 1);
  a.param_bytes = 10;
  a.saves_output = false;
  graph::Op v = testing::TimedOp("v", 0);
  v.saves_output = false;
  graph::Op b = testing::TimedOp("b", 1);
  b.param_bytes = 20;
  b.saves_output = false;
  b.saved_bytes = 7;
  const auto ia = f.AddOp(a, {{100}});
  const auto iv = f.AddOp(v, {{.bytes = 100, .view = true, .view_of_op = ia}});
  const auto ib = f.AddOp(b, {{200}});
  const auto ic = f.AddOp(testing::TimedOp("c", 1), {{4}});
  f.AddEdge(ia, 0, iv, /*saved=*/false);
  f.AddEdge(iv, 0, ib, /*saved=*/true);
  f.AddEdge(ib, 0, ic, /*saved=*/false);
  auto forward = f.Build();
  EXPECT_TRUE(forward.ok()) << forward.status().message();
  // What backward keeps, each storage once: a's output (through v) and b's 7 bytes (the loss c
  // is the model's output, not a saved activation).
  EXPECT_DOUBLE_EQ(graph::SavedActivationBytes(*forward), 107);
  auto expanded = graph::ExpandTraining(*forward);
  EXPECT_TRUE(expanded.ok()) << expanded.status().message();
  auto g = std::make_shared<const graph::Graph>(std::move(expanded).value());
  // Update ops have no measured time: devices with a peak make theirs tiny.
  hw::ClusterBuilder c("two_peaks");
  c.AddDevice({.name = "d0", .kind = "gpu", .peak_flops = 1e15});
  c.AddDevice({.name = "d1", .kind = "gpu", .peak_flops = 1e15});
  c.SetDefaultLink({.bandwidth_bytes_per_s = 1, .latency_s = 0});
  auto cluster = std::make_shared<const hw::Cluster>(c.Build().value());
  auto problem = MakeProblem(g, cluster, Objective::kStep, cost::RooflineCostModel());
  EXPECT_TRUE(problem.ok()) << problem.status().message();
  return std::move(problem).value();
}

TEST(PipelineSimTest, AStageHoldsWhatBackwardKeepsAndWhatCrossesPerMicrobatch) {
  Problem p = TrainingStages();
  // Ops: a v b c, their grads, a/update b/update.
  ASSERT_EQ(p.num_ops(), 10);
  const Placement split = sim::OnDevices({0, 0, 1, 1, 0, 0, 1, 1, 0, 1});
  // d0 holds a's output (v, its view, is sent to b): 100; resident 10 + 10 + 20 (Adam).
  // d1 holds the copy of v it received (100), b's 7 inner bytes and c's 4: 111 (not b's 200);
  // resident 20 + 20 + 40.
  auto gpipe = SimulatePipeline(p, split, PipelineSchedule::kGPipe, 3);
  ASSERT_TRUE(gpipe.ok()) << gpipe.status().message();
  EXPECT_DOUBLE_EQ(gpipe->stages[0].held_per_microbatch_bytes, 100);
  EXPECT_DOUBLE_EQ(gpipe->stages[1].held_per_microbatch_bytes, 111);
  EXPECT_DOUBLE_EQ(gpipe->stages[0].peak_memory_bytes, 40 + 3 * 100);
  EXPECT_DOUBLE_EQ(gpipe->stages[1].peak_memory_bytes, 80 + 3 * 111);
  // 1F1B: S - s micro-batches in flight on stage s.
  auto one = SimulatePipeline(p, split, PipelineSchedule::k1F1B, 3);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(one->stages[0].peak_in_flight, 2);
  EXPECT_EQ(one->stages[1].peak_in_flight, 1);
  EXPECT_DOUBLE_EQ(one->stages[0].peak_memory_bytes, 40 + 2 * 100);
  EXPECT_DOUBLE_EQ(one->stages[1].peak_memory_bytes, 80 + 111);
}

// y0 -> y1 -> y2, 1 s each, 4-byte tensors.
Problem ThreeInAChain(Objective objective = Objective::kStep) {
  graph::GraphBuilder c("back_and_forth");
  const auto y0 = c.AddOp(testing::TimedOp("y0", 1), {{4}});
  const auto y1 = c.AddOp(testing::TimedOp("y1", 1), {{4}});
  const auto y2 = c.AddOp(testing::TimedOp("y2", 1), {{4}});
  c.AddEdge(y0, 0, y1);
  c.AddEdge(y1, 0, y2);
  return testing::Make(c, testing::ThreeDevices(), objective);
}

TEST(PipelineSimTest, AConstantSharedByStagesOrdersNoStage) {
  // k (a constant: no input, no weights) sits on d1 and feeds x0 on d0 and x1 on d1; x0 feeds
  // x1. k's stage comes first in program order, but d0 -> d1 is the only order data allows.
  graph::GraphBuilder b("shared_constant");
  const auto k = b.AddOp(testing::TimedOp("k", 0), {{4}});
  const auto x0 = b.AddOp(testing::TimedOp("x0", 1), {{4}});
  const auto x1 = b.AddOp(testing::TimedOp("x1", 1), {{4}});
  b.AddEdge(k, 0, x0);
  b.AddEdge(k, 0, x1);
  b.AddEdge(x0, 0, x1);
  Problem p = testing::Make(b, testing::ThreeDevices());
  auto r = SimulatePipeline(p, sim::OnDevices({1, 0, 1}), PipelineSchedule::k1F1B, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stages[0].device, 0);
  EXPECT_DOUBLE_EQ(r->makespan_s, 1 + 4 + 1 + 1);  // F0 on d0, x0's 4 bytes at 1 B/s, F0 F1 on d1
  // Stages that feed each other (y0 on d0 -> y1 on d1 -> y2 on d0) are not a pipeline: one line.
  Problem q = ThreeInAChain();
  auto bad = SimulatePipeline(q, sim::OnDevices({0, 1, 0}), PipelineSchedule::k1F1B, 2);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("not a pipeline"), std::string::npos);
}

using testing::UniformStages;

Placement UniformSplit(int stages) {
  Placement p;
  for (int k = 0; k < 2; ++k) {
    for (int s = 0; s < stages; ++s) p.push_back(DeviceId(s));
  }
  return p;
}

// Stage k of `stages` (its forward and backward op) on device k mod `devices`.
Placement RoundRobinSplit(int stages, int devices) {
  Placement p;
  for (int k = 0; k < 2; ++k) {
    for (int s = 0; s < stages; ++s) p.push_back(DeviceId(s % devices));
  }
  return p;
}

// Each schedule's idle time on uniform stages against its published formula: GPipe and 1F1B
// (S-1)/(M+S-1) of the step; ZB-H1 (S-1)(F+I-W) of idle per stage (Qi et al. 2024, table 1);
// ZB-H2 (S-1)(F+I-2W), at least 0, of idle on the first stage between its first task and its
// last (the parallelogram: its published bubble overlaps consecutive steps, past the optimiser's
// synchronisation, which one simulated step does not: the step is (S-1)F longer than its work).
TEST(PipelineScheduleTest, EveryScheduleIdlesAsItsFormulaSaysOnUniformStages) {
  for (int stages : {2, 4, 8}) {
    for (int m : {8, 16, 32}) {
      for (const auto& [f, i, w] : {std::tuple{1.0, 1.0, 1.0}, std::tuple{1.0, 1.2, 0.8}}) {
        const Problem p = UniformStages(stages, f, i, w);
        const Placement split = UniformSplit(stages);
        auto run = [&](PipelineSchedule schedule) {
          auto r = SimulatePipeline(p, split, schedule, m);
          EXPECT_TRUE(r.ok()) << r.status().message();
          return *r;
        };
        const std::string where = "S=" + std::to_string(stages) + " M=" + std::to_string(m) +
                                  " F,I,W=" + std::to_string(f) + "," + std::to_string(i) + "," +
                                  std::to_string(w);
        const double work = m * (f + i + w);
        const double flush = (stages - 1.0) / (m + stages - 1.0);
        for (PipelineSchedule schedule : {PipelineSchedule::kGPipe, PipelineSchedule::k1F1B}) {
          EXPECT_NEAR(run(schedule).bubble_fraction, flush, 0.02 * flush) << where;
        }
        const PipelineResult h1 = run(PipelineSchedule::kZbH1);
        const double h1_idle = (stages - 1) * (f + i - w);
        EXPECT_NEAR(h1.makespan_s - work, h1_idle, 0.02 * h1_idle) << where;
        // ZB-H2 fills its warm-up with 2(S-s)-1 forwards: the formula's domain is M >= 2S-1.
        const PipelineResult h2 = run(PipelineSchedule::kZbH2);
        if (m >= 2 * stages - 1) {
          EXPECT_NEAR(h2.makespan_s, work + (stages - 1) * f, 0.02 * (stages - 1) * f) << where;
          const double h2_idle = (stages - 1) * std::max(0.0, f + i - 2 * w);
          double first = h2.makespan_s, last = 0;
          for (const PipelineTask& t : h2.tasks) {
            if (t.device != DeviceId(0)) continue;
            first = std::min(first, t.start_s);
            last = std::max(last, t.end_s);
          }
          EXPECT_NEAR(last - first - work, h2_idle, 0.02 * (stages - 1) * f) << where;
        }
        // The zero-bubble schedules hold no more than their memory formulas: ZB-H1
        // (S-s) M_B + s M_W, ZB-H2 (2S-2s-1) M_B + 2s M_W on stage s, where M_W <= M_B (the
        // first stage's M_B has no received input: its M_W, with a gradient, is larger).
        for (int s = 0; s < stages; ++s) {
          const PipelineStage& a = h1.stages[s];
          EXPECT_LE(a.peak_in_flight, stages) << where;
          const PipelineStage& b = h2.stages[s];
          EXPECT_LE(b.peak_in_flight, 2 * stages - 1) << where;
          if (s > 0) {
            ASSERT_LE(a.held_for_weight_bytes, a.held_per_microbatch_bytes);
            EXPECT_LE(a.peak_memory_bytes,
                      (stages - s) * a.held_per_microbatch_bytes + s * a.held_for_weight_bytes)
                << where;
            EXPECT_LE(b.peak_memory_bytes, (2 * stages - 2 * s - 1) * b.held_per_microbatch_bytes +
                                               2 * s * b.held_for_weight_bytes)
                << where;
          }
          EXPECT_EQ(run(PipelineSchedule::k1F1B).stages[s].peak_in_flight, stages - s) << where;
        }
      }
    }
  }
}

TEST(PipelineScheduleTest, InterleavingDividesTheBubbleByItsChunks) {
  // S devices of V uniform chunks each, round robin: bubble (S-1)/(VM+S-1) (Narayanan et al.
  // 2021); device r holds at most its warm-up and one more chunk-micro-batch in flight.
  for (int devices : {2, 4, 8}) {
    for (int chunks : {2, 3, 4}) {
      for (int m : {8, 16, 32}) {
        if (m % devices != 0) continue;
        const std::string where = "S=" + std::to_string(devices) + " V=" + std::to_string(chunks) +
                                  " M=" + std::to_string(m);
        const Problem p = UniformStages(devices * chunks, 1, 1, 1, hw::kUnlimited, devices);
        auto r = SimulatePipeline(p, RoundRobinSplit(devices * chunks, devices),
                                  PipelineSchedule::kInterleaved, m);
        ASSERT_TRUE(r.ok()) << r.status().message() << " " << where;
        EXPECT_EQ(r->virtual_stages, chunks) << where;
        ASSERT_EQ(r->stages.size(), static_cast<size_t>(devices)) << where;
        const double bubble = (devices - 1.0) / (chunks * m + devices - 1.0);
        EXPECT_NEAR(r->bubble_fraction, bubble, 0.02 * bubble) << where;
        for (int d = 0; d < devices; ++d) {
          const int warmup =
              m == devices ? chunks * m : 2 * (devices - d - 1) + (chunks - 1) * devices + 1;
          EXPECT_EQ(r->stages[d].peak_in_flight, std::min(warmup, chunks * m)) << where;
          EXPECT_EQ(r->stages[d].busy_s, chunks * m * 3.0) << where;
        }
        // The same chunks under 1F1B are no pipeline; one chunk a device runs 1F1B.
        EXPECT_FALSE(SimulatePipeline(p, RoundRobinSplit(devices * chunks, devices),
                                      PipelineSchedule::k1F1B, m)
                         .ok());
      }
    }
  }
  const Problem one = UniformStages(4, 1, 1, 1);
  auto a = SimulatePipeline(one, UniformSplit(4), PipelineSchedule::kInterleaved, 8);
  auto b = SimulatePipeline(one, UniformSplit(4), PipelineSchedule::k1F1B, 8);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->virtual_stages, 1);
  EXPECT_DOUBLE_EQ(a->makespan_s, b->makespan_s);
  // Micro-batches go in groups of the devices; chunks that do not go round are refused.
  const Problem two = UniformStages(4, 1, 1, 1, hw::kUnlimited, 2);
  auto odd = SimulatePipeline(two, RoundRobinSplit(4, 2), PipelineSchedule::kInterleaved, 7);
  EXPECT_FALSE(odd.ok());
  // Three chunks on two devices go round with an empty fourth; d0 d1 d2 d1 does not go round.
  Placement three = RoundRobinSplit(4, 2);
  three[OpId(3)] = three[OpId(7)] = DeviceId(0);  // d0 d1 d0 d0
  auto padded = SimulatePipeline(two, three, PipelineSchedule::kInterleaved, 8);
  ASSERT_TRUE(padded.ok()) << padded.status().message();
  EXPECT_EQ(padded->virtual_stages, 2);
  const Problem on_three = UniformStages(4, 1, 1, 1, hw::kUnlimited, 3);
  Placement skewed = RoundRobinSplit(4, 3);
  skewed[OpId(3)] = skewed[OpId(7)] = DeviceId(1);  // d0 d1 d2 d1
  auto bad = SimulatePipeline(on_three, skewed, PipelineSchedule::kInterleaved, 9);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("round robin"), std::string::npos);
}

TEST(PipelineScheduleTest, ZeroBubbleSplitsBackwardIntoInputAndWeightGradients) {
  // Two stages, F = I = W = 1, two micro-batches. d1: F0 [1,2] I0 [2,3] F1 [3,4] I1 [4,5] W0 W1;
  // d0: F0 F1, I0 [3,4] after d1's I0, W0 [4,5] in the gap before I1 [5,6], W1 [6,7].
  const Problem p = UniformStages(2, 1, 1, 1);
  auto r = SimulatePipeline(p, UniformSplit(2), PipelineSchedule::kZbH1, 2);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->makespan_s, 7);  // 1F1B: 9
  EXPECT_DOUBLE_EQ(r->stages[0].weight_s, 1);
  std::string d0;
  for (const PipelineTask& t : r->tasks) {
    if (t.device == DeviceId(0)) d0 += static_cast<char>(t.kind) + std::to_string(t.microbatch);
  }
  EXPECT_EQ(d0, "F0F1I0W0I1W1");
  // What a micro-batch holds from I to W: f0's output kept for W and the gradient b1 sent.
  EXPECT_DOUBLE_EQ(r->stages[0].held_for_weight_bytes, 5 + 1);
  // The schedules that do not split run one backward task.
  auto whole = SimulatePipeline(p, UniformSplit(2), PipelineSchedule::k1F1B, 2);
  ASSERT_TRUE(whole.ok());
  EXPECT_DOUBLE_EQ(whole->makespan_s, 9);
  for (const PipelineTask& t : whole->tasks) EXPECT_NE(t.kind, TaskKind::kWeight);
}

// UniformStages on `replicas` (per stage) devices of one group each, whose backward ops hold
// `gradient_bytes` of weight gradients; links of 1 byte/s.
Problem ReplicatedStages(const std::vector<int>& replicas, double gradient_bytes) {
  const int stages = static_cast<int>(replicas.size());
  int devices = 0;
  for (int r : replicas) devices += r;
  const Problem plain = UniformStages(stages, 1, 1, 1, hw::kUnlimited, devices, gradient_bytes);
  std::vector<std::vector<DeviceId>> groups;
  int next = 0;
  for (int r : replicas) {
    groups.emplace_back();
    for (int k = 0; k < r; ++k) groups.back().push_back(DeviceId(next++));
  }
  auto grouped = plain.c().Grouped(groups);
  EXPECT_TRUE(grouped.ok()) << grouped.status().message();
  return std::move(MakeProblem(plain.graph,
                               std::make_shared<const hw::Cluster>(*std::move(grouped)),
                               Objective::kStep, cost::RooflineCostModel()))
      .value();
}

TEST(PipelineScheduleTest, StagesOfDReplicasRunAsDPipelinesOfAShareOfTheMicroBatches) {
  // One degree d for every stage: d pipelines of M/d micro-batches, under every schedule, then
  // each stage's ring all-reduce, 2(d-1)/d of its gradients (2 bytes at 1 byte/s), the first
  // stage's (the last to end) exposed.
  for (int stages : {2, 4}) {
    for (int d : {2, 4}) {
      for (PipelineSchedule schedule : {PipelineSchedule::kGPipe, PipelineSchedule::k1F1B,
                                        PipelineSchedule::kZbH1, PipelineSchedule::kZbH2}) {
        const int m = 16;
        const std::string where = "S=" + std::to_string(stages) + " d=" + std::to_string(d) + " " +
                                  std::string(sched::ScheduleName(schedule));
        auto replicated =
            SimulatePipeline(ReplicatedStages(std::vector<int>(static_cast<size_t>(stages), d), 2),
                             UniformSplit(stages), schedule, m);
        auto plain = SimulatePipeline(UniformStages(stages, 1, 1, 1, hw::kUnlimited, 0, 2),
                                      UniformSplit(stages), schedule, m / d);
        ASSERT_TRUE(replicated.ok() && plain.ok()) << replicated.status().message() << where;
        const double allreduce = 2.0 * (d - 1) / d * 2;
        EXPECT_DOUBLE_EQ(replicated->stages[0].allreduce_s, allreduce) << where;
        EXPECT_DOUBLE_EQ(replicated->makespan_s, plain->makespan_s + allreduce) << where;
        for (int s = 0; s < stages; ++s) {
          EXPECT_EQ(replicated->stages[s].replicas, d) << where;
          EXPECT_EQ(replicated->stages[s].peak_in_flight, plain->stages[s].peak_in_flight) << where;
          EXPECT_DOUBLE_EQ(replicated->stages[s].peak_memory_bytes,
                           plain->stages[s].peak_memory_bytes)
              << where;
        }
      }
    }
  }
}

TEST(PipelineScheduleTest, AStageOfMoreReplicasHoldsTheMicroBatchesOfTheStagesAfterItInTurn) {
  // Two replicas of stage 0, one of stage 1 (PipeDream's round robin): each replica of stage 0
  // warms up with ceil(3 / 2) - 1 forwards of its own micro-batches and holds 2; stage 1, the
  // bottleneck at F + B = 3 a micro-batch, holds one and is busy from the first forward's end.
  auto r =
      SimulatePipeline(ReplicatedStages({2, 1}, 0), UniformSplit(2), PipelineSchedule::k1F1B, 8);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stages[0].peak_in_flight, 2);
  EXPECT_EQ(r->stages[1].peak_in_flight, 1);
  EXPECT_DOUBLE_EQ(r->stages[0].allreduce_s, 0);  // no gradients
  EXPECT_GE(r->makespan_s, 8 * 3.0 + 1 + 2);      // stage 1's work, its first input, the last B
  EXPECT_LE(r->makespan_s, 8 * 3.0 + 1 + 2 + 1e-9);
  std::string replica1;
  for (const PipelineTask& t : r->tasks) {
    if (t.device == DeviceId(0) && t.replica == 1)
      replica1 += static_cast<char>(t.kind) + std::to_string(t.microbatch);
  }
  EXPECT_EQ(replica1, "F1F3B1F5B3F7B5B7");
  // A replica runs whole micro-batches: their count must be a multiple of its stage's replicas.
  auto odd =
      SimulatePipeline(ReplicatedStages({2, 1}, 0), UniformSplit(2), PipelineSchedule::k1F1B, 7);
  ASSERT_FALSE(odd.ok());
  EXPECT_NE(odd.status().message().find("not a multiple"), std::string::npos);
  // Interleaved chunks run one replica a stage (a plan of one stage a device runs 1F1B).
  auto interleaved = SimulatePipeline(ReplicatedStages({2, 1}, 0), RoundRobinSplit(2, 2),
                                      PipelineSchedule::kInterleaved, 8);
  EXPECT_TRUE(interleaved.ok());
}

// Two stages of two forward ops each: a (0.5 s, an inner tensor of 20 bytes that b's backward
// keeps) and b (0.5 s, 5 bytes sent on or, on the last stage, kept), and their backward ops
// (0.5 s each, 1-byte gradients). The first device holds `first_memory_bytes`. With `attention`,
// a is a softmax whose scores a matrix product makes (m: no time, a 1-byte output, ops 8 and 9,
// m1 reading b0 in a0's stead): attention's core, m and a.
Problem StagesWithInsides(double first_memory_bytes, bool attention = false) {
  hw::ClusterBuilder c("insides");
  for (int s = 0; s < 2; ++s) {
    c.AddDevice({.name = "d" + std::to_string(s),
                 .kind = "gpu",
                 .memory_bytes = s == 0 ? first_memory_bytes : hw::kUnlimited});
  }
  c.SetDefaultLink({.bandwidth_bytes_per_s = 1, .latency_s = 0});
  graph::GraphBuilder b("insides");
  std::vector<graph::OpId> fa, fb, ba, bb;
  for (int s = 0; s < 2; ++s) {
    const std::string n = std::to_string(s);
    graph::Op a = testing::TimedOp("fa" + n, 0.5);
    if (attention) a.type = "Softmax";
    fa.push_back(b.AddOp(std::move(a), {{20, 0}}));
    fb.push_back(b.AddOp(testing::TimedOp("fb" + n, 0.5), {{5, 0}}));
  }
  for (int s = 0; s < 2; ++s) {
    for (auto* list : {&bb, &ba}) {
      graph::Op o = testing::TimedOp((list == &bb ? "bb" : "ba") + std::to_string(s), 0.5);
      o.kind = graph::OpKind::kBackward;
      list->push_back(b.AddOp(std::move(o), {{1, 0}}));
    }
  }
  for (int s = 0; s < 2; ++s) {
    b.AddEdge(fa[s], 0, fb[s]);
    b.AddEdge(fa[s], 0, bb[s]);  // the inner tensor, kept
    b.AddEdge(bb[s], 0, ba[s]);
    if (s == 0 && !attention) b.AddEdge(fb[0], 0, fa[1]);
    if (s == 0) b.AddEdge(ba[1], 0, bb[0]);
  }
  b.AddEdge(fb[1], 0, bb[1]);  // the last output, kept
  if (attention) {
    for (int s = 0; s < 2; ++s) {
      graph::Op m = testing::TimedOp("fm" + std::to_string(s), 0);
      m.type = "MatMul";
      const graph::OpId id = b.AddOp(std::move(m), {{1, 0}});
      b.AddEdge(id, 0, fa[s]);
      if (s == 1) b.AddEdge(fb[0], 0, id);
    }
  }
  return testing::Make(b, std::make_shared<const hw::Cluster>(std::move(c.Build()).value()));
}

TEST(PipelineScheduleTest, ARecomputingStageKeepsItsInputsAndOutputsAndRunsItsForwardAgain) {
  // 1F1B over 4 micro-batches. Keeping everything, d0 holds 2 micro-batches of 25 bytes (its
  // inner tensor and the output it sent), d1 one of 30 (the copy it received, its inner tensor,
  // its output).
  const Problem p = StagesWithInsides(hw::kUnlimited);
  const Placement split{DeviceId(0), DeviceId(0), DeviceId(1), DeviceId(1),
                        DeviceId(0), DeviceId(0), DeviceId(1), DeviceId(1)};
  auto none = SimulatePipeline(p, split, PipelineSchedule::k1F1B, 4);
  auto full = SimulatePipeline(p, split, PipelineSchedule::k1F1B, 4, Recompute::kFull);
  ASSERT_TRUE(none.ok() && full.ok()) << none.status().message() << full.status().message();
  EXPECT_DOUBLE_EQ(none->stages[0].peak_memory_bytes, 2 * 25);
  EXPECT_DOUBLE_EQ(none->stages[1].peak_memory_bytes, 30);
  // Recomputing, a stage keeps what it received and what it sent (d0 5, d1 5) for each
  // micro-batch in flight, and one micro-batch in full while its backward runs.
  EXPECT_TRUE(full->stages[0].recomputes && full->stages[1].recomputes);
  EXPECT_DOUBLE_EQ(full->stages[0].held_when_recomputing_bytes, 5);
  EXPECT_DOUBLE_EQ(full->stages[0].peak_memory_bytes, 2 * 5 + 25);
  EXPECT_DOUBLE_EQ(full->stages[1].held_when_recomputing_bytes, 5);
  EXPECT_DOUBLE_EQ(full->stages[1].peak_memory_bytes, 5 + 30);
  // Every backward runs the forward again: 4 x 1 s more busy per stage.
  EXPECT_DOUBLE_EQ(full->stages[0].busy_s, none->stages[0].busy_s + 4);
  EXPECT_GT(full->makespan_s, none->makespan_s);
  // Auto recomputes only where keeping everything does not fit: d0 with 40 bytes.
  const Problem tight = StagesWithInsides(40);
  auto too_much = SimulatePipeline(tight, split, PipelineSchedule::k1F1B, 4);
  auto chosen = SimulatePipeline(tight, split, PipelineSchedule::k1F1B, 4, Recompute::kAuto);
  ASSERT_TRUE(too_much.ok() && chosen.ok());
  EXPECT_FALSE(too_much->feasible);
  EXPECT_TRUE(chosen->feasible) << chosen->reason;
  EXPECT_TRUE(chosen->stages[0].recomputes);
  EXPECT_FALSE(chosen->stages[1].recomputes);
  EXPECT_LT(chosen->makespan_s, full->makespan_s);
}

TEST(PipelineScheduleTest, RecomputingAttentionsCoreKeepsAllButItsOutputs) {
  // As above, a0 and a1 attention's core: selective recomputation keeps their outputs (20) of no
  // micro-batch in flight but the one whose backward runs, and runs a again (0.5 s).
  const Problem p = StagesWithInsides(hw::kUnlimited, /*attention=*/true);
  const Placement split{DeviceId(0), DeviceId(0), DeviceId(1), DeviceId(1), DeviceId(0),
                        DeviceId(0), DeviceId(1), DeviceId(1), DeviceId(0), DeviceId(1)};
  auto none = SimulatePipeline(p, split, PipelineSchedule::k1F1B, 4);
  auto core = SimulatePipeline(p, split, PipelineSchedule::k1F1B, 4, Recompute::kSelective);
  ASSERT_TRUE(none.ok() && core.ok()) << none.status().message() << core.status().message();
  EXPECT_DOUBLE_EQ(none->stages[0].peak_memory_bytes, 2 * 25);
  EXPECT_EQ(core->stages[0].recompute, Recompute::kSelective);
  EXPECT_DOUBLE_EQ(core->stages[0].held_selective_bytes, 5);
  EXPECT_DOUBLE_EQ(core->stages[0].peak_memory_bytes, 2 * 5 + 20);
  EXPECT_DOUBLE_EQ(core->stages[1].held_selective_bytes, 10);
  EXPECT_DOUBLE_EQ(core->stages[0].busy_s, none->stages[0].busy_s + 4 * 0.5);
  // Auto takes it before recomputing everything, which would hold 35 and cost 1 s a backward.
  const Problem tight = StagesWithInsides(40, /*attention=*/true);
  auto chosen = SimulatePipeline(tight, split, PipelineSchedule::k1F1B, 4, Recompute::kAuto);
  ASSERT_TRUE(chosen.ok());
  EXPECT_TRUE(chosen->feasible) << chosen->reason;
  EXPECT_EQ(chosen->stages[0].recompute, Recompute::kSelective);
  EXPECT_EQ(chosen->stages[1].recompute, Recompute::kNone);
  // Without a matrix product before it, a softmax is no attention's: nothing to recompute.
  const Problem plain = StagesWithInsides(hw::kUnlimited);
  Placement eight = split;
  eight.resize(8);
  auto nothing = SimulatePipeline(plain, eight, PipelineSchedule::k1F1B, 4, Recompute::kSelective);
  ASSERT_TRUE(nothing.ok());
  EXPECT_DOUBLE_EQ(nothing->stages[0].held_selective_bytes,
                   nothing->stages[0].held_per_microbatch_bytes);
}

TEST(PipelineScheduleTest, AutoTakesTheFastestScheduleThatFits) {
  // Input gradients dearer than weight gradients: ZB-H2 idles (S-1)F, ZB-H1 (S-1)(F+I-W) more.
  Problem p = UniformStages(4, 1, 1.2, 0.8);
  p.objective = Objective::kPipeline;
  p.microbatches = 8;
  p.schedule_auto = true;
  const Placement split = UniformSplit(4);
  auto best = SimulateProblemPipeline(p, split);
  ASSERT_TRUE(best.ok());
  for (PipelineSchedule s : {PipelineSchedule::k1F1B, PipelineSchedule::kZbH1}) {
    auto other = SimulatePipeline(p, split, s, 8);
    ASSERT_TRUE(other.ok());
    EXPECT_LT(best->time_per_microbatch_s, other->time_per_microbatch_s);
  }
  EXPECT_EQ(best->schedule, PipelineSchedule::kZbH2);
  EXPECT_DOUBLE_EQ(testing::EvaluatorOf(p)->Evaluate(split).value, best->time_per_microbatch_s);
  // Where ZB-H2's deeper warm-up does not fit on the first stage, a schedule that does.
  Problem tight = UniformStages(4, 1, 1.2, 0.8, /*first_memory_bytes=*/5 * 4);
  tight.objective = Objective::kPipeline;
  tight.schedule_auto = true;
  auto fits = SimulateProblemPipeline(tight, split);
  ASSERT_TRUE(fits.ok());
  EXPECT_TRUE(fits->feasible) << fits->reason;
  EXPECT_NE(fits->schedule, PipelineSchedule::kZbH2);
}

TEST(PipelineObjectiveTest, TheValueIsTheSchedulesTimePerMicrobatch) {
  Problem p = TwoStages();
  p.objective = Objective::kPipeline;
  p.microbatches = 4;
  const Placement split = sim::OnDevices({0, 1, 1, 0});
  const Evaluation e = testing::EvaluatorOf(p)->Evaluate(split);
  auto run = SimulatePipeline(p, split, PipelineSchedule::k1F1B, 4);
  ASSERT_TRUE(run.ok());
  EXPECT_EQ(e.objective, Objective::kPipeline);
  EXPECT_DOUBLE_EQ(e.value, run->time_per_microbatch_s);
  EXPECT_TRUE(e.feasible) << e.reason;
  EXPECT_DOUBLE_EQ(e.devices[DeviceId(0)].busy_s, 3);  // f0 + b0 per micro-batch
  EXPECT_DOUBLE_EQ(e.devices[DeviceId(1)].load, 3);
  EXPECT_EQ(e.devices[DeviceId(1)].ops, 2);
  // Under GPipe the same split takes longer: its backwards wait for every forward.
  p.schedule = PipelineSchedule::kGPipe;
  auto gpipe = SimulatePipeline(p, split, PipelineSchedule::kGPipe, 4);
  ASSERT_TRUE(gpipe.ok());
  EXPECT_DOUBLE_EQ(testing::EvaluatorOf(p)->Evaluate(split).value, gpipe->time_per_microbatch_s);
}

TEST(PipelineObjectiveTest, StagesThatAreNoPipelineAreInfeasibleWithTheReason) {
  const Problem q = ThreeInAChain(Objective::kPipeline);
  const Evaluation e = testing::EvaluatorOf(q)->Evaluate(sim::OnDevices({0, 1, 0}));
  EXPECT_FALSE(e.feasible);
  EXPECT_NE(e.reason.find("not a pipeline"), std::string::npos) << e.reason;
  EXPECT_GT(e.value, 0);  // the max-load: a search still sees the work it moves
  const Evaluation chain = testing::EvaluatorOf(q)->Evaluate(sim::OnDevices({0, 1, 1}));
  EXPECT_TRUE(chain.feasible) << chain.reason;
}

}  // namespace
}  // namespace dplace::sim
