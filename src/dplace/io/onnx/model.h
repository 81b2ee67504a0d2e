// ONNX models (as exported by torch.onnx.export) into dplace graphs, with libonnx (Debian
// libonnx-dev). Weights are never needed: a model exported with export_params=False, or whose
// weights live in external data files, is read from its graph alone.
//
//   - ONNX shape inference (with data propagation) gives every tensor's shape and element type;
//   - one op per ONNX node; one edge per node input produced by another node (so the counts are the
//     file's); output bytes from the inferred shapes;
//   - parameters: initializers, and graph inputs that are only read as weights (docs/onnx.md);
//     a node holds the parameters it reads first (a shared weight is counted once);
//   - FLOPs per op from its type, attributes and shapes (flops.h, the op table in ops.h); bytes
//   accessed = its
//     inputs + outputs.
// Warnings (not errors): an op type without a FLOPs formula (one line per type, a generic estimate
// used), dimensions shape inference could not determine (taken as 1). Errors: not a model, a data
// input with a symbolic dimension (its shapes cannot be inferred), a node whose output shape stays
// unknown.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "dplace/base/status.h"
#include "dplace/graph/graph.h"
#include "dplace/graph/precision.h"
#include "dplace/io/onnx/file.h"

namespace dplace::io {

struct OnnxGraph {
  graph::Graph graph;
  std::vector<std::string> warnings;
  // The precision of the model's floating-point tensors (the most bytes among fp32, fp16, bf16).
  graph::Precision precision = graph::Precision::kFp32;
  int64_t batch = 0;  // the first dimension of the first data input (0 when it has none)
};

// `bytes` is the file's content; `name` names the graph.
// Fixed sizes for a model's inputs ("tokens" -> {8, 512}): they replace what the file says,
// symbolic axes (a dynamic batch) included.
using InputShapes = std::map<std::string, std::vector<int64_t>>;

// `ties`: the folded copies of tied weights (ReadOnnxFile finds them before it leaves the values
// out); null: found in `bytes`.
StatusOr<OnnxGraph> ReadOnnxModel(const std::string& bytes, const std::string& name,
                                  const InputShapes& shapes = {}, const FoldedTies* ties = nullptr);

}  // namespace dplace::io
