// Fits the move scorer's weights offline (mcmc.guide=learned with mcmc.guide_model=FILE) on exact
// labels, and writes them:
//
//   build/release/bench/move_scorer_fit [--out FILE] [--moves N]
//
// Problems: graph 0 of the five generated families at the training seeds 0, 1 and 2, training
// steps on k80x4 and v100x8-nvlink — never seed 3 or the bundled models, on which the guide is
// measured (bench/mcmc_control.py). Bases: each problem's heft placement and mcmc's after 2,000
// evaluations from it. Per base, N moves of one unit of the critical path (the units the guide
// moves) to another of its devices, each labelled with its exact relative change of the step
// time (a full evaluation, so no label is censored). Ordinary least squares over every label;
// printed: the fit's R² on its labels and, fit without one family, on that family's.
#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "dplace/base/file_util.h"
#include "dplace/base/rng.h"
#include "dplace/graph/families.h"
#include "dplace/io/load.h"
#include "dplace/place/search/move_scorer.h"
#include "dplace/place/units.h"
#include "dplace/registry/registry.h"
#include "dplace/sim/evaluator.h"

namespace dplace {
namespace {

struct Example {
  place::MoveFeatures f;
  double label;
  int family;
};

// The labelled moves of one problem, from its two bases.
std::vector<Example> Label(const std::shared_ptr<const sim::Problem>& p, int family, int moves,
                           Rng& rng) {
  std::vector<Example> out;
  const place::Units units = place::MakeUnits(*p);
  IdVector<sim::OpId, place::UnitId> unit_of_op(p->g().ops().size());
  for (place::UnitId u : units.ids()) {
    for (sim::OpId op : units[u].ops) unit_of_op[op] = u;
  }
  const auto evaluator = sim::MakeEvaluator(p);
  sim::Placement base = place::MakePlacer("heft")
                            .value()
                            .placer->Place(*p, {.evaluator = evaluator.get(), .seed = 1})
                            .value()
                            .placement;
  for (int round = 0; round < 2; ++round) {
    if (round == 1) {
      base = place::MakePlacer("mcmc")
                 .value()
                 .placer
                 ->Place(*p, {.evaluator = evaluator.get(),
                              .seed = 1,
                              .limits = {.evaluations = 2000},
                              .start = &base})
                 .value()
                 .placement;
    }
    place::MoveContext context(*p, units, unit_of_op);
    sim::Timing timing;
    const sim::Evaluation e = evaluator->EvaluateTimed(base, &timing);
    if (!e.feasible || e.value <= 0) continue;
    context.Refresh(e, timing.critical_path);
    std::vector<place::UnitId> critical;
    for (sim::OpId op : timing.critical_path) {
      const place::UnitId u = unit_of_op[op];
      if (critical.empty() || critical.back() != u) critical.push_back(u);
    }
    place::PerUnit<sim::DeviceId> device(units.size());
    for (place::UnitId u : units.ids()) device[u] = base[units[u].ops[0]];
    const auto device_of = [&device](place::UnitId v) { return device[v]; };
    for (int k = 0; k < moves && !critical.empty(); ++k) {
      const place::UnitId u = critical[rng.Below(critical.size())];
      const auto& allowed = units[u].devices;
      if (allowed.size() < 2) continue;
      sim::DeviceId to = allowed[rng.Below(allowed.size())];
      if (to == device[u]) continue;
      sim::Placement moved = base;
      place::Assign(units[u], to, &moved);
      const sim::Evaluation after = evaluator->Evaluate(moved);
      if (!after.feasible) continue;
      out.push_back(
          {context.Features(u, to, device_of), (after.value - e.value) / e.value, family});
    }
  }
  return out;
}

// Least squares over the examples whose family is not `left_out` (-1: none), with a ridge of
// 1e-9 of the diagonal's mean so that a feature that never varies leaves the system solvable.
std::array<double, place::kMoveFeatures> Fit(const std::vector<Example>& examples, int left_out) {
  constexpr int n = place::kMoveFeatures;
  std::array<double, static_cast<size_t>(n) * (n + 1)> a{};  // [A | b], A = Σ f fᵀ, b = Σ f y
  for (const Example& x : examples) {
    if (x.family == left_out) continue;
    for (int i = 0; i < n; ++i) {
      for (int j = 0; j < n; ++j) a[i * (n + 1) + j] += x.f[i] * x.f[j];
      a[i * (n + 1) + n] += x.f[i] * x.label;
    }
  }
  double trace = 0;
  for (int i = 0; i < n; ++i) trace += a[i * (n + 1) + i];
  for (int i = 0; i < n; ++i) a[i * (n + 1) + i] += 1e-9 * trace / n + 1e-300;
  for (int c = 0; c < n; ++c) {  // Gaussian elimination, partial pivoting
    int pivot = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(a[r * (n + 1) + c]) > std::abs(a[pivot * (n + 1) + c])) pivot = r;
    }
    for (int k = 0; k <= n; ++k) std::swap(a[c * (n + 1) + k], a[pivot * (n + 1) + k]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double m = a[r * (n + 1) + c] / a[c * (n + 1) + c];
      for (int k = c; k <= n; ++k) a[r * (n + 1) + k] -= m * a[c * (n + 1) + k];
    }
  }
  std::array<double, n> w{};
  for (int i = 0; i < n; ++i) w[i] = a[i * (n + 1) + n] / a[i * (n + 1) + i];
  return w;
}

// R² of `w` on the examples of `family` (-1: all).
double RSquared(const std::array<double, place::kMoveFeatures>& w,
                const std::vector<Example>& examples, int family) {
  double mean = 0, count = 0;
  for (const Example& x : examples) {
    if (family >= 0 && x.family != family) continue;
    mean += x.label;
    ++count;
  }
  mean /= std::max(count, 1.0);
  double residual = 0, total = 0;
  for (const Example& x : examples) {
    if (family >= 0 && x.family != family) continue;
    double y = 0;
    for (int i = 0; i < place::kMoveFeatures; ++i) y += w[i] * x.f[i];
    residual += (x.label - y) * (x.label - y);
    total += (x.label - mean) * (x.label - mean);
  }
  return total > 0 ? 1 - residual / total : 0;
}

int Main(int argc, char** argv) {
  std::string out = std::string(DPLACE_SOURCE_DIR) + "/models/move_scorer.txt";
  int moves = 300;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--out" && i + 1 < argc) {
      out = argv[++i];
    } else if (arg == "--moves" && i + 1 < argc) {
      moves = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr, "usage: move_scorer_fit [--out FILE] [--moves N]\n");
      return 2;
    }
  }
  const std::vector<std::string> families = {"enas_cnn", "enas_rnn", "nmt", "nasnet", "layered"};
  std::vector<Example> examples;
  Rng rng(11);
  for (size_t f = 0; f < families.size(); ++f) {
    for (uint64_t seed : {0, 1, 2}) {
      auto generated = graph::GenerateGraph(families[f], seed, 0);
      if (!generated.ok()) {
        std::fprintf(stderr, "%s\n", std::string(generated.status().message()).c_str());
        return 2;
      }
      const auto g = std::make_shared<const graph::Graph>(*std::move(generated));
      for (const char* cluster : {"k80x4", "v100x8-nvlink"}) {
        auto p = std::make_shared<const sim::Problem>(
            std::move(sim::MakeProblem(g, *io::LoadCluster(cluster), sim::Objective::kStep,
                                       cost::RooflineCostModel()))
                .value());
        const auto labelled = Label(p, static_cast<int>(f), moves, rng);
        examples.insert(examples.end(), labelled.begin(), labelled.end());
      }
    }
  }
  const auto w = Fit(examples, -1);
  std::printf("%zu labelled moves; R² on them %.3f\n", examples.size(), RSquared(w, examples, -1));
  for (size_t f = 0; f < families.size(); ++f) {
    const auto without = Fit(examples, static_cast<int>(f));
    std::printf("  fit without %s: R² on %s %.3f\n", families[f].c_str(), families[f].c_str(),
                RSquared(without, examples, static_cast<int>(f)));
  }
  const std::string text = place::MoveScorer::Pretrained(w).Text();
  std::printf("weights: %s", text.substr(text.find('\n') + 1).c_str());
  if (Status s = WriteFileAtomically(out, text, "move scorer"); !s.ok()) {
    std::fprintf(stderr, "%s\n", std::string(s.message()).c_str());
    return 2;
  }
  std::printf("wrote %s\n", out.c_str());
  return 0;
}

}  // namespace
}  // namespace dplace

int main(int argc, char** argv) { return dplace::Main(argc, argv); }
