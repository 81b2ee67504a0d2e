// Synthetic layered graphs for benchmarks and scale tests: `num_ops` ops in layers of `width`;
// every op after the first layer reads the outputs of two ops of the layer before. Costs are drawn
// from a seeded generator, so the same arguments always give the same graph.
#pragma once

#include <cstdint>

#include "dplace/graph/graph.h"

namespace dplace::graph {

struct SyntheticOptions {
  int num_ops = 1000;
  int width = 16;  // ops per layer
  uint64_t seed = 1;
};

// Ops carry a measured time on "gpu" and "cpu" (cpu 10x slower), FLOPs, parameter and output bytes.
Graph MakeLayeredGraph(const SyntheticOptions& options);

}  // namespace dplace::graph
