// Plans in the terms other frameworks speak (docs/onnx.md):
//   device_map  module path -> device, as Hugging Face accelerate's `device_map` takes it: the
//               module path comes from the op's scoped name ("/layer1/layer1.0/conv1/Conv" ->
//               "layer1.0.conv1"; backward and update ops count with their forward op); each module
//               goes where most of its ops' FLOPs run; GPUs are written as their index among the
//               GPUs (accelerate's convention), CPUs as "cpu", other devices by name.
//   stages      for a contiguous split: the stages in pipeline order (a device each; a topological
//               order of the devices under the forward edges), each with its entry (first forward
//               op fed from another stage, else its first forward op), last forward op and op
//               count, and the split points (the entries of every stage after the first).
#pragma once

#include <string>

#include "dplace/base/json_node.h"
#include "dplace/sim/problem.h"

namespace dplace::io {

// "layer1.0.conv1" from "/layer1/layer1.0/conv1/Conv" (also "/...Conv/grad"); "" when unscoped.
std::string ModulePath(const std::string& op_name);

Json DeviceMapJson(const sim::Problem& problem, const sim::Placement& placement);

// InvalidInput when the placement is not a pipeline of contiguous stages.
StatusOr<Json> StagesJson(const sim::Problem& problem, const sim::Placement& placement);

}  // namespace dplace::io
