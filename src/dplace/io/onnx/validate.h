// What ONNX's own shape inference would trip on, checked first: libonnx 1.12 crashes (SIGSEGV,
// SIGFPE) on some small malformed models instead of reporting them, and accepts others that make
// no sense. Each check gives one line naming the node and the problem.
#pragma once

#include <onnx/onnx_pb.h>

#include "dplace/base/status.h"

namespace dplace::io {

// OkStatus, or InvalidInput naming the first node (or opset) that is malformed:
//   - an opset of the default domain outside what the library knows;
//   - a tensor produced by two nodes;
//   - a node of a known op type with fewer inputs than its schema requires, or a required input
//     left empty;
//   - strides, dilations, kernel_shape or group below 1, or negative pads;
//   - Conv, ConvTranspose, pooling, LSTM, GRU and RNN inputs of a known rank that the op cannot
//     take (a weight of another rank than the data, recurrent data that is not rank 3).
Status ValidateOnnxModel(const onnx::ModelProto& model);

}  // namespace dplace::io
