// Variants of a problem that real runtimes differ by: another step model (one outgoing bus per
// device, latency that delays arrival without holding the channel), links without latency, and
// seeded noise in op times and bandwidths. A variant shares the base's graph; it is a Problem
// like any other, so every evaluator judges it. RobustVariants makes the K variants the robust
// evaluator judges by (robust_evaluator.h); docs/semantics.md says exactly which variant k is.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/sim/problem.h"

namespace dplace::sim {

struct VariantSpec {
  StepModel model;            // channels, latency mode, runtime (objective step only)
  bool drop_latency = false;  // every link's latency 0 (Placeto's simulator has none)
  // Noise: each op's time on each device class, and each directed pair's bandwidth, is multiplied
  // by exp(spread * z), z a standard normal drawn from `seed` (a log-normal factor whose log has
  // standard deviation `spread`). 0: no noise, the numbers bit for bit the base's.
  double op_time_spread = 0;
  double bandwidth_spread = 0;
  uint64_t seed = 0;
};

// `base` under `spec`: the same graph, objective, allowed devices and constraints; the cluster with
// its links scaled, the cost table with its op times scaled, the step model; the lower bound made
// again for the variant (with latency kArrival, on links without latency, so that it holds).
// InvalidInput when a spread is negative, above 2 or not finite.
StatusOr<Problem> MakeVariant(const Problem& base, const VariantSpec& spec);

// A step model by name, as `simulate --step-model` takes it: comma-separated words, each one of
// per_pair, per_device (channels), gap, arrival (latency mode), no_latency (drop_latency; the
// latency mode then makes no difference). Omitted parts keep the default. InvalidInput naming the
// word otherwise.
StatusOr<VariantSpec> ParseVariantSpec(const std::string& text);

// The variants the robust evaluator judges by.
struct RobustOptions {
  int count = 0;        // K, the number of variants: 1..64 (0: no robust judgement)
  double quantile = 1;  // the robust value: this quantile of the K values, (0, 1]; 1: the worst
  uint64_t seed = 1;    // of the noise draws (not the placers' seed: every run sees the same K)
  double spread = 0.1;  // op_time_spread and bandwidth_spread of every variant
};

// InvalidInput naming the field ("robust count: must be between 1 and 64") when `options` asks
// for no variant or for impossible ones.
Status CheckRobustOptions(const RobustOptions& options);

// Variant k of the robust set (k >= 0): channels per_device when k is odd (else per_pair); latency
// kArrival when k / 2 is odd (else kGap) — so k = 0, 1, 2, 3 are the four models and k = 4 .. 7
// the four again with other noise; noise of options.spread on op times and on bandwidths, drawn
// from a seed mixed of options.seed and k.
VariantSpec RobustVariantSpec(int k, const RobustOptions& options);

// The K = options.count variants of `base` (RobustVariantSpec(k) for k = 0 .. K-1, each with the
// base's runtime: StepModel::issue).
// InvalidInput as CheckRobustOptions.
StatusOr<std::vector<std::shared_ptr<const Problem>>> RobustVariants(const Problem& base,
                                                                     const RobustOptions& options);

}  // namespace dplace::sim
