// Small problems written inline for the simulator tests: devices d0, d1 (kind "gpu") and c0 (kind
// "cpu"), links of bandwidth 1 byte/s and zero latency, so a tensor of N bytes takes N seconds.
#pragma once

#include <memory>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph_builder.h"
#include "dplace/graph/synthetic.h"
#include "dplace/graph/training.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/problem.h"

namespace dplace::sim::testing {

inline std::shared_ptr<const hw::Cluster> ThreeDevices(double memory_bytes = hw::kUnlimited) {
  hw::ClusterBuilder b("test3");
  b.AddDevice({.name = "d0", .kind = "gpu", .memory_bytes = memory_bytes});
  b.AddDevice({.name = "d1", .kind = "gpu", .memory_bytes = memory_bytes});
  b.AddDevice({.name = "c0", .kind = "cpu"});
  b.SetDefaultLink({.bandwidth_bytes_per_s = 1, .latency_s = 0});
  return std::make_shared<const hw::Cluster>(std::move(b.Build()).value());
}

inline graph::Op TimedOp(const std::string& name, double gpu_s, double cpu_s = -1) {
  graph::Op op;
  op.name = name;
  op.time_s = {{"gpu", gpu_s}, {"cpu", cpu_s < 0 ? 10 * gpu_s : cpu_s}};
  return op;
}

inline Problem Make(graph::GraphBuilder& b, std::shared_ptr<const hw::Cluster> c,
                    Objective objective = Objective::kStep) {
  auto g = std::make_shared<const graph::Graph>(std::move(b.Build()).value());
  return std::move(MakeProblem(g, std::move(c), objective, cost::RooflineCostModel())).value();
}

// a (1 s) has outputs t0 -> x and t1 -> y (1 s each, also on the CPU), 1 byte each.
inline Problem Fork(std::shared_ptr<const hw::Cluster> cluster) {
  graph::GraphBuilder b("fork");
  const auto a = b.AddOp(TimedOp("a", 1), {{1, -1}, {1, -1}});
  const auto x = b.AddOp(TimedOp("x", 1, 1));
  const auto y = b.AddOp(TimedOp("y", 1, 1));
  b.AddEdge(a, 0, x);
  b.AddEdge(a, 1, y);
  return Make(b, std::move(cluster));
}

// The training step (gradients free of their forward ops) of a layered synthetic graph of
// `num_ops` forward ops on four GPUs of `gpu_memory_bytes` and a CPU, links of 10 GB/s and
// `latency_s`: memory tight enough that some placements overflow.
inline Problem TightTraining(int num_ops, uint64_t seed, double gpu_memory_bytes,
                             double latency_s) {
  auto forward = graph::MakeLayeredGraph({.num_ops = num_ops, .width = 6, .seed = seed});
  auto g = std::make_shared<const graph::Graph>(
      std::move(graph::ExpandTraining(forward, {.colocate = false})).value());
  hw::ClusterBuilder cb("four");
  for (int d = 0; d < 4; ++d) {
    cb.AddDevice({.name = "gpu" + std::to_string(d),
                  .kind = "gpu",
                  .memory_bytes = gpu_memory_bytes,
                  .peak_flops = 1e13,
                  .memory_bandwidth_bytes_per_s = 1e12});
  }
  cb.AddDevice({.name = "cpu0", .kind = "cpu", .peak_flops = 1e11});
  cb.SetDefaultLink({.bandwidth_bytes_per_s = 1e10, .latency_s = latency_s});
  auto cluster = std::make_shared<const hw::Cluster>(std::move(cb.Build()).value());
  return std::move(MakeProblem(g, cluster, Objective::kStep, cost::RooflineCostModel())).value();
}

// A training step of a chain f0 -> f1 -> f2 -> f3 (1 ms each, 10 bytes of weights, 100-byte
// outputs each backward keeps) on two GPUs of 490 bytes, objective throughput. By op sizes (every
// op's parameters and outputs) no split fits; under 1F1B (`pipelined`) a stage holds its weights,
// gradients and Adam state plus, per micro-batch in flight, what backward keeps and what it sends
// and receives: the 2|2 split holds 80 + 2 x 200 and 80 + 1 x 300.
inline Problem TrainingChain(bool pipelined) {
  graph::GraphBuilder b("chain");
  graph::OpId prev{-1};
  for (int i = 0; i < 4; ++i) {
    graph::Op op = TimedOp("f" + std::to_string(i), 1e-3);
    op.param_bytes = 10;
    op.saves_output = false;
    const graph::OpId id = b.AddOp(op, {{100}});
    if (prev >= 0) b.AddEdge(prev, 0, id, /*saved=*/true);
    prev = id;
  }
  auto g = std::make_shared<const graph::Graph>(
      std::move(graph::ExpandTraining(std::move(b.Build()).value())).value());
  hw::ClusterBuilder c("two_small_gpus");
  for (const char* name : {"gpu0", "gpu1"}) {
    c.AddDevice({.name = name, .kind = "gpu", .memory_bytes = 490, .peak_flops = 1e12});
  }
  auto cluster = std::make_shared<const hw::Cluster>(std::move(c.Build()).value());
  Problem p =
      std::move(MakeProblem(g, cluster, Objective::kThroughput, cost::RooflineCostModel())).value();
  if (pipelined) p.stage_memory = Problem::StageMemory::kSchedule;
  return p;
}

// n independent chains of four 1-s ops with 0.01-byte tensors on ThreeDevices: two chains run on
// two GPUs in 4 s (plus nothing to move), on one GPU in 8 s.
inline Problem IndependentChains(int n) {
  graph::GraphBuilder b("chains");
  for (int chain = 0; chain < n; ++chain) {
    graph::OpId prev{-1};
    for (int i = 0; i < 4; ++i) {
      const graph::OpId op =
          b.AddOp(TimedOp("c" + std::to_string(chain) + "_" + std::to_string(i), 1), {{0.01, -1}});
      if (prev >= 0) b.AddEdge(prev, 0, op);
      prev = op;
    }
  }
  return Make(b, ThreeDevices());
}

// S uniform stages of a training chain, one device each: forward f_s (F s), backward b_s (I + W s,
// W of it weight gradients), f_s -> f_s+1, b_s+1 -> b_s, f_s kept by b_s; activations of 5
// bytes, gradients of 1, moving in no time; b_s holds `weight_gradient_bytes` of weight gradients.
// On `devices` devices d0, d1, ... (0: `stages`), the first of `first_memory_bytes`.
inline Problem UniformStages(int stages, double f, double i, double w,
                             double first_memory_bytes = hw::kUnlimited, int devices = 0,
                             double weight_gradient_bytes = 0) {
  hw::ClusterBuilder c("uniform");
  for (int s = 0; s < (devices > 0 ? devices : stages); ++s) {
    c.AddDevice({.name = "d" + std::to_string(s),
                 .kind = "gpu",
                 .memory_bytes = s == 0 ? first_memory_bytes : hw::kUnlimited});
  }
  c.SetDefaultLink({.bandwidth_bytes_per_s = 1, .latency_s = 0});
  graph::GraphBuilder b("uniform_stages");
  std::vector<graph::OpId> fwd, bwd;
  for (int s = 0; s < stages; ++s) {
    fwd.push_back(b.AddOp(TimedOp("f" + std::to_string(s), f), {{5, 0}}));
  }
  for (int s = 0; s < stages; ++s) {
    graph::Op o = TimedOp("b" + std::to_string(s), i + w);
    o.kind = graph::OpKind::kBackward;
    o.weight_gradient_share = w / (i + w);
    o.param_bytes = weight_gradient_bytes;
    bwd.push_back(b.AddOp(std::move(o), {{1, 0}}));
  }
  for (int s = 0; s < stages; ++s) {
    if (s + 1 < stages) b.AddEdge(fwd[s], 0, fwd[s + 1]);
    if (s + 1 < stages) b.AddEdge(bwd[s + 1], 0, bwd[s]);
    b.AddEdge(fwd[s], 0, bwd[s]);
  }
  return Make(b, std::make_shared<const hw::Cluster>(std::move(c.Build()).value()));
}

// The evaluator of a copy of `problem` (evaluators share ownership of their problem; a test's
// problem is a value).
inline std::unique_ptr<Evaluator> EvaluatorOf(const Problem& problem) {
  return MakeEvaluator(std::make_shared<const Problem>(problem));
}

}  // namespace dplace::sim::testing
