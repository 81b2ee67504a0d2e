#include "dplace/sim/variants.h"

#include <cmath>
#include <numbers>
#include <sstream>

#include "dplace/base/rng.h"
#include "dplace/sim/objectives.h"

namespace dplace::sim {
namespace {

// SplitMix64's finaliser: seeds that differ in one bit give unrelated streams.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// exp(spread * z) for a standard normal z (Box-Muller from two uniforms); exactly 1 at spread 0.
double Factor(Rng& rng, double spread) {
  const double u1 = 1 - rng.Uniform();  // (0, 1]
  const double u2 = rng.Uniform();
  if (spread == 0) return 1;
  const double z = std::sqrt(-2 * std::log(u1)) * std::cos(2 * std::numbers::pi * u2);
  return std::exp(spread * z);
}

Status CheckSpread(const char* name, double spread) {
  if (std::isfinite(spread) && spread >= 0 && spread <= 2) return OkStatus();
  std::ostringstream m;
  m << name << ": must be between 0 and 2, got " << spread;
  return InvalidInput(m.str());
}

}  // namespace

StatusOr<Problem> MakeVariant(const Problem& base, const VariantSpec& spec) {
  DPLACE_RETURN_IF_ERROR(CheckSpread("op time spread", spec.op_time_spread));
  DPLACE_RETURN_IF_ERROR(CheckSpread("bandwidth spread", spec.bandwidth_spread));
  Problem v = base;
  v.step_model = spec.model;
  // Draws in a fixed order: op factors class by class, then the pairs row by row.
  Rng rng(Mix(spec.seed));
  std::vector<double> op_factor(static_cast<size_t>(base.costs.num_classes()) *
                                base.costs.num_ops());
  for (double& f : op_factor) f = Factor(rng, spec.op_time_spread);
  const size_t n = base.c().devices().size();
  std::vector<double> pair_factor(n * n, 1.0);
  for (size_t src = 0; src < n; ++src) {
    for (size_t dst = 0; dst < n; ++dst) {
      if (src != dst) pair_factor[src * n + dst] = Factor(rng, spec.bandwidth_spread);
    }
  }
  v.costs = base.costs.Scaled(op_factor);
  v.cluster = std::make_shared<const hw::Cluster>(
      base.c().WithLinksScaled(pair_factor, spec.drop_latency ? 0.0 : 1.0));
  v.lower_bound = RowOf(v.objective).lower_bound(v);
  return v;
}

StatusOr<VariantSpec> ParseVariantSpec(const std::string& text) {
  VariantSpec spec;
  std::stringstream ss(text);
  std::string word;
  while (std::getline(ss, word, ',')) {
    if (word == "per_pair") {
      spec.model.channels = Channels::kPerPair;
    } else if (word == "per_device") {
      spec.model.channels = Channels::kPerDevice;
    } else if (word == "gap") {
      spec.model.latency = LatencyMode::kGap;
    } else if (word == "arrival") {
      spec.model.latency = LatencyMode::kArrival;
    } else if (word == "no_latency") {
      spec.drop_latency = true;
    } else {
      return InvalidInput("'" + word + "' is not per_pair, per_device, gap, arrival or no_latency");
    }
  }
  return spec;
}

Status CheckRobustOptions(const RobustOptions& options) {
  if (options.count < 1 || options.count > 64) {
    return InvalidInput("robust count: must be between 1 and 64, got " +
                        std::to_string(options.count));
  }
  if (!(options.quantile > 0 && options.quantile <= 1)) {
    std::ostringstream m;
    m << "robust quantile: must be in (0, 1], got " << options.quantile;
    return InvalidInput(m.str());
  }
  return CheckSpread("robust spread", options.spread);
}

VariantSpec RobustVariantSpec(int k, const RobustOptions& options) {
  VariantSpec spec;
  spec.model.channels = k % 2 == 1 ? Channels::kPerDevice : Channels::kPerPair;
  spec.model.latency = (k / 2) % 2 == 1 ? LatencyMode::kArrival : LatencyMode::kGap;
  spec.op_time_spread = options.spread;
  spec.bandwidth_spread = options.spread;
  spec.seed = Mix(options.seed) ^ static_cast<uint64_t>(k);
  return spec;
}

StatusOr<std::vector<std::shared_ptr<const Problem>>> RobustVariants(const Problem& base,
                                                                     const RobustOptions& options) {
  DPLACE_RETURN_IF_ERROR(CheckRobustOptions(options));
  std::vector<std::shared_ptr<const Problem>> variants;
  for (int k = 0; k < options.count; ++k) {
    VariantSpec spec = RobustVariantSpec(k, options);
    spec.model.issue =
        base.step_model.issue;  // the variants differ in links and noise, not runtime
    DPLACE_ASSIGN_OR_RETURN(Problem v, MakeVariant(base, spec));
    variants.push_back(std::make_shared<const Problem>(std::move(v)));
  }
  return variants;
}

}  // namespace dplace::sim
