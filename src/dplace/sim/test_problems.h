// Small problems written inline for the simulator tests: devices d0, d1 (kind "gpu") and c0 (kind
// "cpu"), links of bandwidth 1 byte/s and zero latency, so a tensor of N bytes takes N seconds.
#pragma once

#include <memory>
#include <vector>

#include "dplace/cost/cost_model.h"
#include "dplace/graph/graph_builder.h"
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

// The evaluator of a copy of `problem` (evaluators share ownership of their problem; a test's
// problem is a value).
inline std::unique_ptr<Evaluator> EvaluatorOf(const Problem& problem) {
  return MakeEvaluator(std::make_shared<const Problem>(problem));
}

}  // namespace dplace::sim::testing
