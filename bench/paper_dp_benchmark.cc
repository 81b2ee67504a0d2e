// `dp` on the 16 throughput workloads of Tarnawski et al., NeurIPS 2020: time per solve, the
// optimum found and its relative difference to the paper program's optimum
// (testdata/dnn-partitioning).
#include <benchmark/benchmark.h>

#include <cmath>

#include "dplace/io/load.h"
#include "dplace/place/exact/exact.h"
#include "dplace/sim/max_load.h"

namespace dplace {
namespace {

struct Workload {
  const char* path;
  double optimum;  // the paper program's value
};

constexpr Workload kWorkloads[] = {
    {"LayerGraphs/bert24_inference", 17.78990625},
    {"LayerGraphs/bert24_training", 41.7458125},
    {"LayerGraphs/gnmt_inference", 32.910658203125},
    {"LayerGraphs/gnmt_training", 107.0044140625},
    {"LayerGraphs/inceptionv3_inference", 51.55186358642578},
    {"LayerGraphs/inceptionv3_training", 122.7616162109375},
    {"LayerGraphs/resnet50_inference", 33.774666015625},
    {"LayerGraphs/resnet50_training", 78.63181250000001},
    {"OperatorGraphs/bert_l-3_inference", 27.9185676799125},
    {"OperatorGraphs/bert_l-3_training", 65.30314912208605},
    {"OperatorGraphs/bert_l-6_inference", 29.57950580645155},
    {"OperatorGraphs/bert_l-6_training", 72.86496632241122},
    {"OperatorGraphs/bert_l-12_inference", 147.47798444934838},
    {"OperatorGraphs/bert_L-12_training", 437.9976378578455},
    {"OperatorGraphs/resnet50_inference", 124.34884977404485},
    {"OperatorGraphs/resnet50_training", 255.19441645217384},
};

void BM_PaperDp(benchmark::State& state, Workload w) {
  auto loaded = io::LoadGraph(std::string(DPLACE_SOURCE_DIR) +
                              "/testdata/dnn-partitioning/throughput-inputs/" + w.path + ".json");
  if (!loaded.ok()) {
    state.SkipWithError(loaded.status().message().c_str());
    return;
  }
  auto made = sim::MakeProblem(loaded->graph, loaded->cluster, sim::Objective::kThroughput,
                               cost::RooflineCostModel());
  if (!made.ok()) {
    state.SkipWithError(made.status().message().c_str());
    return;
  }
  const auto problem = std::make_shared<const sim::Problem>(std::move(made).value());
  double value = 0;
  for (auto _ : state) {
    const auto evaluator = sim::MakeEvaluator(problem);
    auto placement = place::MakeDpPlacer()->Place(*problem, {.evaluator = evaluator.get()});
    if (!placement.ok()) {
      state.SkipWithError(placement.status().message().c_str());
      return;
    }
    value = sim::EvaluateMaxLoad(*problem, placement->placement).value;
  }
  state.counters["max_load"] = value;
  state.counters["rel_diff"] = std::fabs(value - w.optimum) / w.optimum;
}

int Register() {
  for (const Workload& w : kWorkloads) {
    benchmark::RegisterBenchmark(w.path, BM_PaperDp, w)
        ->Unit(benchmark::kMillisecond)
        ->Iterations(1);
  }
  return 0;
}
const int kRegistered = Register();

}  // namespace
}  // namespace dplace

BENCHMARK_MAIN();
