#include "dplace/graph/precision.h"

#include <array>

#include "dplace/graph/graph_builder.h"

namespace dplace::graph {
namespace {

// Bytes per element of what each precision stores.
struct Sizes {
  double activation, weight, gradient;  // weight: what a forward op holds per parameter
};
Sizes SizesOf(Precision p) {
  switch (p) {
    case Precision::kFp32:
      return {4, 4, 4};
    case Precision::kFp16:
    case Precision::kBf16:
      return {2, 2, 2};
    case Precision::kAmp:
      return {2, 4 + 2, 4};
  }
  return {4, 4, 4};
}

}  // namespace

std::string_view PrecisionName(Precision p) {
  constexpr std::array<std::string_view, 4> kNames = {"fp32", "fp16", "bf16", "amp"};
  return kNames[static_cast<size_t>(p)];
}

std::optional<Precision> ParsePrecision(std::string_view name) {
  for (Precision p : {Precision::kFp32, Precision::kFp16, Precision::kBf16, Precision::kAmp}) {
    if (PrecisionName(p) == name) return p;
  }
  return std::nullopt;
}

bool UsesHalfPeak(Precision p) { return p != Precision::kFp32; }

Graph ApplyPrecision(const Graph& g, Precision from, Precision to) {
  const Sizes a = SizesOf(from), b = SizesOf(to);
  const double activation = b.activation / a.activation;
  GraphBuilder builder(g.name());
  for (const std::string& group : g.groups()) builder.Group(group);
  for (OpId id{0}; id < g.num_ops(); ++id) {
    Op op = g.op(id);
    op.bytes_accessed *= activation;
    op.scratch_bytes *= activation;
    op.param_bytes *= op.kind == OpKind::kForward ? b.weight / a.weight : b.gradient / a.gradient;
    std::vector<TensorSpec> outputs;
    for (TensorId t = g.FirstOutput(id); t < g.FirstOutput(id + 1); ++t) {
      TensorSpec spec = SpecOf(g, t);
      spec.bytes *= activation;
      if (spec.transfer_time_s > 0) spec.transfer_time_s *= activation;
      outputs.push_back(spec);
    }
    builder.AddOp(std::move(op), std::move(outputs));
  }
  for (const Edge& e : g.edges()) builder.AddEdge(e.from, e.output, e.to, e.saved);
  return std::move(builder.Build()).value();  // the same ops and edges: valid as g was
}

}  // namespace dplace::graph
