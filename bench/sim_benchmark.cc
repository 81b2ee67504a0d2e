// Speed of the two evaluators on synthetic layered graphs (1k to 1M ops, 4 and 8 GPUs), reported
// as ops per second (items_per_second). Placements are uniformly random, the case with the most
// transfers. Targets on one core: step simulator >= 5M ops/s, max-load >= 50M ops/s.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>

#include "dplace/base/rng.h"
#include "dplace/graph/synthetic.h"
#include "dplace/sim/max_load.h"
#include "dplace/sim/step_sim.h"

namespace dplace {
namespace {

struct Fixture {
  std::unique_ptr<sim::Problem> problem;
  sim::Placement placement;
};

// Built once per (ops, devices) and kept: building a 1M-op graph takes longer than evaluating it.
const Fixture& Get(int num_ops, int num_devices) {
  static std::map<std::pair<int, int>, Fixture> cache;
  Fixture& f = cache[{num_ops, num_devices}];
  if (f.problem) return f;
  auto g = std::make_shared<const graph::Graph>(
      graph::MakeLayeredGraph({.num_ops = num_ops, .width = 32, .seed = 1}));
  hw::ClusterBuilder b("gpus");
  for (int d = 0; d < num_devices; ++d) {
    b.AddDevice({.name = "gpu" + std::to_string(d),
                 .kind = "gpu",
                 .memory_bytes = 80e9,
                 .peak_flops = 1e14,
                 .memory_bandwidth_bytes_per_s = 2e12});
  }
  b.SetDefaultLink({.bandwidth_bytes_per_s = 25e9, .latency_s = 5e-6});
  auto c = std::make_shared<const hw::Cluster>(std::move(b.Build()).value());
  f.problem = std::make_unique<sim::Problem>(
      std::move(sim::MakeProblem(g, c, sim::Objective::kStep, cost::RooflineCostModel())).value());
  Rng rng(7);
  f.placement.resize(static_cast<size_t>(num_ops));
  for (auto& d : f.placement)
    d = static_cast<sim::DeviceId>(rng.Below(static_cast<uint64_t>(num_devices)));
  return f;
}

void BM_StepSimulator(benchmark::State& state) {
  const Fixture& f = Get(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  sim::StepSimulator simulator(*f.problem);
  for (auto _ : state) benchmark::DoNotOptimize(simulator.Makespan(f.placement));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void BM_MaxLoad(benchmark::State& state) {
  const Fixture& f = Get(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  sim::MaxLoadEvaluator evaluator(*f.problem);
  for (auto _ : state) benchmark::DoNotOptimize(evaluator.Value(f.placement));
  state.SetItemsProcessed(state.iterations() * state.range(0));
}

void Sizes(benchmark::internal::Benchmark* b) {
  for (int devices : {4, 8}) {
    for (int ops : {1000, 10000, 100000, 1000000}) b->Args({ops, devices});
  }
  // MinTime: the first run of a 1M-op graph pays page faults; steady state is what search sees.
  b->ArgNames({"ops", "devices"})->Unit(benchmark::kMillisecond)->MinTime(1.0);
}

BENCHMARK(BM_StepSimulator)->Apply(Sizes);
BENCHMARK(BM_MaxLoad)->Apply(Sizes);

}  // namespace
}  // namespace dplace

BENCHMARK_MAIN();
