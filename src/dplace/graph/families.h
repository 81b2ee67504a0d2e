// Families of generated forward graphs, for training learned placers and testing them on graphs
// they never saw (docs/families.md gives every distribution):
//   enas_cnn  ENAS micro-search CNN cells on CIFAR-10 (each graph its own sampled normal and
//             reduction cell, stacked N / reduce / N / reduce / N);
//   enas_rnn  an ENAS recurrent cell (sampled DAG of activations) unrolled over a PTB sequence;
//   nmt       an LSTM encoder-decoder with attention, unrolled over source and target sequences;
//   nasnet    NASNet-A-style cells on ImageNet (five blocks of two operations, separable
//             convolutions applied twice);
//   layered   a layered random DAG (ops, width, fan-in, cost and tensor-size spread).
// Ops carry FLOPs, bytes accessed, parameter and output bytes (fp32), so the cost model prices them
// on any cluster; recurrent weights are variable ops read by every step, as TensorFlow graphs hold
// them. A graph depends only on (family, seed, index, overrides); each has 100-3,000 ops.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/graph/graph.h"

namespace dplace::graph {

// Family parameters given instead of drawn (`--set cells=3`); which keys a family reads is listed
// by FamilyKeys. Unknown keys are an error.
using FamilyOverrides = std::map<std::string, double>;

std::vector<std::string_view> FamilyNames();
// The keys `family` reads, each with a one-line description of its default distribution.
std::vector<std::pair<std::string_view, std::string_view>> FamilyKeys(std::string_view family);

// Graph `index` of `family` for `seed`: named "<family>_<seed>_<index>". InvalidInput for an
// unknown family, an unknown key or a value out of its range.
StatusOr<Graph> GenerateGraph(std::string_view family, uint64_t seed, int index,
                              const FamilyOverrides& overrides = {});

}  // namespace dplace::graph
