// Reading an ONNX file without its weights. dplace reads an initializer's name, type and shape,
// never its values; an export with weights is mostly values (VGG-16: 553 MB). The file is mapped,
// not read, and its protobuf wire format is copied field by field except the value payloads of
// floating-point initializers of more than 64 elements, so their pages are never touched: the
// export loads in about the time of its weight-free twin.
#pragma once

#include <string>
#include <string_view>

#include "dplace/base/status.h"

namespace dplace::io {

// The model's bytes with the large floating-point initializers' values left out. A file whose wire
// format does not parse is returned whole, for the protobuf parser to report.
StatusOr<std::string> ReadOnnxFile(const std::string& path);

// The same on bytes in memory; empty when `bytes` is not a well-formed ModelProto encoding.
std::string WithoutWeights(std::string_view bytes);

}  // namespace dplace::io
