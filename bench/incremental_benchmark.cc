// Incremental re-simulation against full re-simulation (docs/step-placers.md), on the forward and
// the training steps of bundled models on v100x8-nvlink, starting from HEFT's placement: the
// evaluations per second of
//  - Full: StepSimulator::Run of the moved placement;
//  - Near: StepSimulator::RunNear against the unmoved base (mcmc's proposals, local_search's
//  moves);
//  - NearRebase: RunNear, and every 4th move taken as the new base (SetBase), as when accepted;
//  - Scored: what mcmc.guide pays per candidate move instead (place/search/move_scorer.h): the
//    move's features read from the base's simulation and the learned model's prediction (target:
//    2 us a candidate).
// Each move puts one co-location unit (an op; in training, a forward op with its backward and
// update ops) on another allowed device; the moves are drawn once per graph with a fixed seed.
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include "dplace/base/rng.h"
#include "dplace/graph/training.h"
#include "dplace/io/load.h"
#include "dplace/place/search/move_scorer.h"
#include "dplace/place/units.h"
#include "dplace/registry/registry.h"
#include "dplace/sim/evaluator.h"
#include "dplace/sim/step_sim.h"

namespace dplace {
namespace {

constexpr const char* kModels[] = {"resnet50", "inception_v3", "bert_encoder", "rnnlm", "nmt"};

struct Fixture {
  std::shared_ptr<const sim::Problem> problem;
  sim::Placement base;
  std::vector<sim::Placement> moved;  // base with one unit on another device
};

const Fixture& Get(const benchmark::State& state) {
  const auto model = static_cast<size_t>(state.range(0));
  const bool training = state.range(1) != 0;
  static std::map<std::pair<size_t, bool>, Fixture> cache;
  Fixture& f = cache[{model, training}];
  if (f.problem) return f;
  const std::string path = std::string(DPLACE_SOURCE_DIR) + "/models/" + kModels[model] + ".onnx";
  auto loaded = io::LoadGraph(path);
  auto g = training ? std::make_shared<const graph::Graph>(
                          graph::ExpandTraining(*loaded.value().graph).value())
                    : loaded.value().graph;
  f.problem = std::make_shared<const sim::Problem>(
      std::move(sim::MakeProblem(g, *io::LoadCluster("v100x8-nvlink"), sim::Objective::kStep,
                                 cost::RooflineCostModel()))
          .value());
  const auto evaluator = sim::MakeEvaluator(f.problem);
  f.base = place::MakePlacer("heft")
               .value()
               .placer->Place(*f.problem, {.evaluator = evaluator.get(), .seed = 1})
               .value()
               .placement;
  const place::Units units = place::MakeUnits(*f.problem);
  Rng rng(5);
  while (f.moved.size() < 256) {
    const place::Unit& u = units[static_cast<place::UnitId>(rng.Below(units.size()))];
    if (u.devices.size() < 2) continue;
    const sim::DeviceId to = u.devices[rng.Below(u.devices.size())];
    if (to == f.base[u.ops[0]]) continue;
    f.moved.push_back(f.base);
    place::Assign(u, to, &f.moved.back());
  }
  return f;
}

void Report(benchmark::State& state, const Fixture& f) {
  state.SetItemsProcessed(state.iterations());
  state.counters["ops"] = static_cast<double>(f.problem->num_ops());
  state.SetLabel(std::string(kModels[state.range(0)]) + (state.range(1) ? "+train" : ""));
}

void BM_Full(benchmark::State& state) {
  const Fixture& f = Get(state);
  sim::StepSimulator simulator(*f.problem);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(simulator.Run(f.moved[i++ % f.moved.size()]).evaluation.value);
  }
  Report(state, f);
}

// Incremental runs against the base; with `rebase_every` > 0, every such move is taken and becomes
// the base, so later moves are two units away from it.
void RunNear(benchmark::State& state, size_t rebase_every) {
  const Fixture& f = Get(state);
  sim::StepSimulator simulator(*f.problem);
  simulator.SetBase(f.base);
  size_t i = 0;
  for (auto _ : state) {
    const sim::Placement& p = f.moved[i++ % f.moved.size()];
    benchmark::DoNotOptimize(simulator.RunNear(p).evaluation.value);
    if (rebase_every > 0 && i % rebase_every == 0) simulator.SetBase(p);
  }
  Report(state, f);
}

// One scored candidate: features of a unit's move (its crossing tensors, its compute, the loads)
// and the model's prediction, the context refreshed from the base's timed simulation once.
void BM_Scored(benchmark::State& state) {
  const Fixture& f = Get(state);
  const place::Units units = place::MakeUnits(*f.problem);
  IdVector<sim::OpId, place::UnitId> unit_of_op(f.problem->g().ops().size());
  for (place::UnitId u : units.ids()) {
    for (sim::OpId op : units[u].ops) unit_of_op[op] = u;
  }
  place::PerUnit<sim::DeviceId> device(units.size());
  for (place::UnitId u : units.ids()) device[u] = f.base[units[u].ops[0]];
  place::MoveContext context(*f.problem, units, unit_of_op);
  const auto evaluator = sim::MakeEvaluator(f.problem);
  sim::Timing timing;
  context.Refresh(evaluator->EvaluateTimed(f.base, &timing), timing.critical_path);
  place::MoveScorer scorer(place::MoveScorer::Kind::kLearned);
  std::vector<std::pair<place::UnitId, sim::DeviceId>> moves;
  Rng rng(5);
  while (moves.size() < 256) {
    const auto u = static_cast<place::UnitId>(rng.Below(units.size()));
    if (units[u].devices.size() < 2) continue;
    moves.emplace_back(u, units[u].devices[rng.Below(units[u].devices.size())]);
  }
  const auto device_of = [&device](place::UnitId u) { return device[u]; };
  size_t i = 0;
  for (auto _ : state) {
    const auto& [u, to] = moves[i++ % moves.size()];
    benchmark::DoNotOptimize(scorer.Predict(context.Features(u, to, device_of)));
  }
  Report(state, f);
}

void BM_Near(benchmark::State& state) { RunNear(state, 0); }
void BM_NearRebase(benchmark::State& state) { RunNear(state, 4); }

void Models(benchmark::internal::Benchmark* b) {
  for (int training = 0; training < 2; ++training) {
    for (int m = 0; m < static_cast<int>(std::size(kModels)); ++m) b->Args({m, training});
  }
  b->ArgNames({"model", "training"})->Unit(benchmark::kMicrosecond);
}

BENCHMARK(BM_Full)->Apply(Models);
BENCHMARK(BM_Near)->Apply(Models);
BENCHMARK(BM_NearRebase)->Apply(Models);
BENCHMARK(BM_Scored)->Apply(Models);

}  // namespace
}  // namespace dplace

BENCHMARK_MAIN();
