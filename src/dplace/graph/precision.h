// The numeric precision of a step: fp32, fp16, bf16, or AMP (autocast: half-precision activations
// and matrix products, fp32 master weights, gradients and optimiser state).
//
// ApplyPrecision rescales a graph's bytes from the precision it was made in to another: tensors
// and memory traffic by the activation element size, what forward ops hold by the weight size
// (AMP: the fp32 master weights plus the half copies autocast keeps for the step), what backward
// and update ops hold by the gradient / optimiser-state size. Integer tensors are rescaled like
// the others (a graph does not say which tensors are integers); FLOPs and measured times are kept.
// Which peak FLOP/s a device offers at a precision is the cluster's (hw::Device::peak_flops_half).
#pragma once

#include <optional>
#include <string_view>

#include "dplace/graph/graph.h"

namespace dplace::graph {

enum class Precision : uint8_t { kFp32, kFp16, kBf16, kAmp };

std::string_view PrecisionName(Precision p);
std::optional<Precision> ParsePrecision(std::string_view name);  // "fp32", "fp16", "bf16", "amp"
// Whether matrix products run at the half-precision peak (fp16, bf16, AMP).
bool UsesHalfPeak(Precision p);

// `g` (made in `from`) with its bytes as they are in `to`.
Graph ApplyPrecision(const Graph& g, Precision from, Precision to);

}  // namespace dplace::graph
