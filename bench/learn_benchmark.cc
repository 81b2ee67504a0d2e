// The learned placers' speed (docs/learned.md): the Placeto embedding's forward + backward over
// graphs of 250 to 3,000 units on one core (target: >= 20 per second at 1,000), and one zero-shot
// placement with the bundled policy (64 evaluations; target: < 1 s up to 3,000 ops).
#include <benchmark/benchmark.h>

#include "dplace/graph/families.h"
#include "dplace/io/load.h"
#include "dplace/learn/placeto.h"
#include "dplace/registry/registry.h"

namespace dplace {
namespace {

std::shared_ptr<const sim::Problem> Layered(int ops) {
  auto g = std::make_shared<const graph::Graph>(
      graph::GenerateGraph("layered", 5, 0, {{"ops", ops}, {"width", 16}}).value());
  return std::make_shared<const sim::Problem>(
      sim::MakeProblem(g, io::LoadCluster("v100x8-nvlink").value(), sim::Objective::kStep,
                       cost::RooflineCostModel())
          .value());
}

void BM_EmbeddingForwardBackward(benchmark::State& state) {
  learn::EmbeddingTimer timer(Layered(static_cast<int>(state.range(0))));
  for (auto _ : state) timer.ForwardBackward();
  state.counters["nodes"] = timer.nodes();
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmbeddingForwardBackward)
    ->Arg(250)
    ->Arg(1000)
    ->Arg(3000)
    ->Unit(benchmark::kMillisecond);

void BM_PlacetoZeroShot(benchmark::State& state) {
  const auto problem = Layered(static_cast<int>(state.range(0)));
  place::Member placer = place::MakePlacer("placeto").value();
  for (auto _ : state) {
    auto evaluator = sim::MakeEvaluator(problem);
    auto placed = placer.placer->Place(
        *problem, {.evaluator = evaluator.get(), .limits = {.evaluations = 64, .seconds = 1}});
    benchmark::DoNotOptimize(placed);
  }
}
BENCHMARK(BM_PlacetoZeroShot)->Arg(1000)->Arg(3000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace dplace

BENCHMARK_MAIN();
