// Reading an ONNX file without its weights. dplace reads an initializer's name, type and shape,
// never its values; an export with weights is mostly values (VGG-16: 553 MB). The file is mapped,
// not read, and its protobuf wire format is copied field by field except the value payloads of
// floating-point initializers of more than 64 elements, so their pages are never touched: the
// export loads in about the time of its weight-free twin.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include "dplace/base/status.h"

namespace dplace::io {

// Weights torch.onnx's constant folding made from a tied weight: {a folded "onnx::MatMul_N": the
// named initializer it holds the transpose of} (a tied head reading the embedding's table through
// a Transpose the folder computed: the same parameter, read again).
using FoldedTies = std::map<std::string, std::string>;

// The 2-D initializers named "onnx::..." whose values are the transpose of a named initializer's,
// read from a ModelProto's wire format; empty where the file holds no values (an export with
// export_params=False) or does not parse.
FoldedTies FindFoldedTies(std::string_view bytes);

struct OnnxFile {
  std::string model;  // the model's bytes, the large floating-point initializers' values left out
  FoldedTies ties;    // found before the values were left out
};

// A file whose wire format does not parse is returned whole, for the protobuf parser to report.
StatusOr<OnnxFile> ReadOnnxFile(const std::string& path);

// The same on bytes in memory; empty when `bytes` is not a well-formed ModelProto encoding.
std::string WithoutWeights(std::string_view bytes);

}  // namespace dplace::io
