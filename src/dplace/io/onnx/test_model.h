// Small ONNX models built in tests: values, nodes, constants and attributes, for the importer's
// tests (model_test.cc, autograd_test.cc).
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace dplace::io {

// Sets `v` to a tensor of `elem_type` and `dims` (and a last symbolic dimension when given).
inline void AddValue(onnx::ValueInfoProto* v, const std::string& name,
                     const std::vector<int64_t>& dims, const std::string& symbolic = "",
                     int elem_type = onnx::TensorProto::FLOAT) {
  v->set_name(name);
  auto* type = v->mutable_type()->mutable_tensor_type();
  type->set_elem_type(elem_type);
  for (int64_t d : dims) type->mutable_shape()->add_dim()->set_dim_value(d);
  if (!symbolic.empty()) type->mutable_shape()->add_dim()->set_dim_param(symbolic);
}

// A node named "<type>_<index>".
inline onnx::NodeProto* AddNode(onnx::GraphProto* g, const std::string& type,
                                const std::vector<std::string>& inputs,
                                const std::vector<std::string>& outputs) {
  onnx::NodeProto* n = g->add_node();
  n->set_op_type(type);
  n->set_name(type + "_" + std::to_string(g->node_size()));
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return n;
}

// A float32 initializer without values (the importer reads only shapes of weights).
inline void AddWeight(onnx::GraphProto* g, const std::string& name,
                      const std::vector<int64_t>& dims) {
  onnx::TensorProto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) t->add_dims(d);
}

// A Constant node of float32 (real) or int64 values.
inline onnx::NodeProto* AddConstant(onnx::GraphProto* g, const std::string& name,
                                    const std::vector<int64_t>& dims,
                                    const std::vector<double>& values, bool real) {
  onnx::NodeProto* n = AddNode(g, "Constant", {}, {name});
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name("value");
  a->set_type(onnx::AttributeProto::TENSOR);
  onnx::TensorProto* t = a->mutable_t();
  t->set_data_type(real ? onnx::TensorProto::FLOAT : onnx::TensorProto::INT64);
  for (int64_t d : dims) t->add_dims(d);
  for (double v : values) {
    if (real) {
      t->add_float_data(static_cast<float>(v));
    } else {
      t->add_int64_data(static_cast<int64_t>(v));
    }
  }
  return n;
}

inline void SetInt(onnx::NodeProto* n, const std::string& name, int64_t value) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(value);
}

inline void SetInts(onnx::NodeProto* n, const std::string& name,
                    const std::vector<int64_t>& values) {
  onnx::AttributeProto* a = n->add_attribute();
  a->set_name(name);
  a->set_type(onnx::AttributeProto::INTS);
  for (int64_t v : values) a->add_ints(v);
}

}  // namespace dplace::io
