// ONNX shape inference, continued past computed shapes (shapes.cc): fills the model's
// value_info with every shape ONNX infers plus those derived from evaluating the small tensors
// PyTorch exports compute shapes with, taken If branches included; data-dependent sizes take their
// upper bound (docs/onnx.md).
#pragma once

#include <onnx/onnx_pb.h>

#include "dplace/base/status.h"

namespace dplace::io {

// InvalidInput when ONNX's shape inference rejects the model.
Status InferOnnxShapes(onnx::ModelProto& model);

}  // namespace dplace::io
