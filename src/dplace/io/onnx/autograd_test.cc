// What the importer says a training step runs and keeps, rule by rule, on small models written as
// torch.onnx exports them: one backward GEMM per operand that needs a gradient, wherever a weight
// comes from; views only where PyTorch makes views; what scatter and dropout keep; the names of
// weights that constant folding renamed. (PyTorch's own counts on whole models: python/tests.)
#include <gtest/gtest.h>

#include "dplace/graph/training.h"
#include "dplace/io/onnx/model.h"
#include "dplace/io/onnx/test_model.h"

namespace dplace::io {
namespace {

onnx::ModelProto Empty(int opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(opset);
  m.mutable_graph()->set_name("g");
  return m;
}

const graph::Op& OpOf(const OnnxGraph& g, const std::string& output_of_node) {
  return g.graph.op(*g.graph.FindOp(output_of_node));
}

StatusOr<OnnxGraph> Read(const onnx::ModelProto& m) {
  return ReadOnnxModel(m.SerializeAsString(), "g");
}

// tokens -> Gather(E) -> MatMul(., Transpose(W1)) -> MatMul(., Transpose(W2)) -> q . k^T -> a tied
// head MatMul(., Transpose(E)); and data x -> MatMul(x, Transpose(W3)), the first layer.
TEST(OnnxAutogradTest, EachGemmOperandThatNeedsAGradientGetsOneBackwardGemm) {
  onnx::ModelProto m = Empty();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->add_input(), "tokens", {2, 4}, "", onnx::TensorProto::INT64);
  AddValue(g->add_input(), "x", {2, 4, 8});
  for (const char* w : {"W1", "W2", "W3"}) AddWeight(g, w, {8, 8});
  AddWeight(g, "E", {16, 8});
  AddNode(g, "Gather", {"E", "tokens"}, {"e"})->set_name("embed");
  AddNode(g, "Transpose", {"W1"}, {"w1t"});
  AddNode(g, "MatMul", {"e", "w1t"}, {"h1"})->set_name("hidden");
  AddNode(g, "Transpose", {"W2"}, {"w2t"});
  AddNode(g, "MatMul", {"h1", "w2t"}, {"h2"})->set_name("hidden2");
  SetInts(AddNode(g, "Transpose", {"h2"}, {"h2t"}), "perm", {0, 2, 1});
  AddNode(g, "MatMul", {"h1", "h2t"}, {"scores"})->set_name("scores");
  AddNode(g, "Transpose", {"E"}, {"et"});
  AddNode(g, "MatMul", {"h2", "et"}, {"logits"})->set_name("head");
  AddNode(g, "Transpose", {"W3"}, {"w3t"});
  AddNode(g, "MatMul", {"x", "w3t"}, {"first"})->set_name("first_layer");
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(OpOf(*r, "hidden").backward_factor, 2);       // the activation and W1 through Transpose
  EXPECT_EQ(OpOf(*r, "hidden").param_bytes, 0);           // the Transpose holds W1
  EXPECT_EQ(OpOf(*r, "scores").backward_factor, 2);       // both operands are activations
  EXPECT_EQ(OpOf(*r, "head").backward_factor, 2);         // the tied weight, held by the Gather
  EXPECT_EQ(OpOf(*r, "first_layer").backward_factor, 1);  // x needs no gradient
  EXPECT_EQ(OpOf(*r, "embed").backward_factor, 1);
  auto step = graph::ExpandTraining(r->graph);
  ASSERT_TRUE(step.ok());
  const double fwd = OpOf(*r, "head").flops;
  EXPECT_DOUBLE_EQ(step->op(*step->FindOp("head/grad")).flops, 2 * fwd);
  EXPECT_DOUBLE_EQ(step->op(*step->FindOp("first_layer/grad")).flops,
                   OpOf(*r, "first_layer").flops);
}

// An op of integers only (shape arithmetic, a mask from token ids) has no backward work.
TEST(OnnxAutogradTest, AnOpNothingDifferentiableReachesHasNoBackwardWork) {
  onnx::ModelProto m = Empty();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", {2, 4});
  AddNode(g, "Relu", {"x"}, {"y"})->set_name("relu");
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(OpOf(*r, "relu").backward_factor, 0);
}

// softmax(x, dtype=torch.float32) on float32 (Hugging Face's attention) is a same-type Cast:
// PyTorch's .to returns the tensor itself, so the Cast is no op and what reads it reads the tensor
// (the exporter reads later uses of the tensor from the Cast). A Cast to another type copies.
TEST(OnnxAutogradTest, ACastToTheSameTypeIsNoOpAndToAnotherTypeACopy) {
  onnx::ModelProto m = Empty();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", {2, 4});
  AddWeight(g, "w", {4});
  AddNode(g, "Mul", {"x", "w"}, {"a"})->set_name("mul");
  SetInt(AddNode(g, "Cast", {"a"}, {"same"}), "to", onnx::TensorProto::FLOAT);
  AddNode(g, "Relu", {"same"}, {"r"})->set_name("relu");
  SetInt(AddNode(g, "Cast", {"a"}, {"half"}), "to", onnx::TensorProto::FLOAT16);
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const graph::Graph& gr = r->graph;
  EXPECT_FALSE(gr.FindOp("Cast_2"));
  ASSERT_EQ(gr.Predecessors(*gr.FindOp("relu")).size(), 1u);
  EXPECT_EQ(gr.Predecessors(*gr.FindOp("relu"))[0], *gr.FindOp("mul"));
  EXPECT_FALSE(gr.tensor(gr.FirstOutput(*gr.FindOp("Cast_4"))).view);
  EXPECT_DOUBLE_EQ(gr.tensor(gr.FirstOutput(*gr.FindOp("Cast_4"))).bytes, 2 * 4 * 2);
}

// Hugging Face's repeat_kv: x[:, :, None].expand(...).reshape(b, heads, s, d) copies (its merged
// dimension has stride 0); a reshape that only splits a dimension stays a view.
TEST(OnnxAutogradTest, AReshapeOfAnExpandedTensorCopies) {
  onnx::ModelProto m = Empty();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", {2, 2, 1, 8, 16});
  AddWeight(g, "w", {16});
  AddNode(g, "Mul", {"x", "w"}, {"kv"});
  AddConstant(g, "to", {5}, {2, 2, 3, 8, 16}, false);
  AddNode(g, "Expand", {"kv", "to"}, {"expanded"})->set_name("expand");
  AddConstant(g, "merged", {4}, {2, 6, 8, 16}, false);
  AddNode(g, "Reshape", {"expanded", "merged"}, {"heads"})->set_name("merge");
  AddConstant(g, "split", {6}, {2, 2, 3, 8, 4, 4}, false);
  AddNode(g, "Reshape", {"expanded", "split"}, {"parts"})->set_name("split");
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const graph::Graph& gr = r->graph;
  EXPECT_TRUE(gr.tensor(gr.FirstOutput(*gr.FindOp("expand"))).view);
  EXPECT_FALSE(gr.tensor(gr.FirstOutput(*gr.FindOp("merge"))).view);
  EXPECT_DOUBLE_EQ(gr.tensor(gr.FirstOutput(*gr.FindOp("merge"))).bytes, 2 * 6 * 8 * 16 * 4);
  EXPECT_TRUE(gr.tensor(gr.FirstOutput(*gr.FindOp("split"))).view);
}

// A GNN's aggregation, zeros.scatter_add(0, index, messages): backward keeps the index only
// (ScatterAddBackward0 saves `index`), not the messages nor the result.
TEST(OnnxAutogradTest, ScatterAddKeepsOnlyItsIndex) {
  onnx::ModelProto m = Empty(16);
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->add_input(), "nodes", {6, 4});
  AddValue(g->add_input(), "index", {10, 4}, "", onnx::TensorProto::INT64);
  AddValue(g->add_input(), "edges", {10, 4});
  AddWeight(g, "w", {4});
  AddNode(g, "Mul", {"edges", "w"}, {"messages"});
  AddNode(g, "Abs", {"index"}, {"idx"});  // an index computed in the graph
  onnx::NodeProto* scatter =
      AddNode(g, "ScatterElements", {"nodes", "idx", "messages"}, {"aggregated"});
  scatter->set_name("scatter");
  onnx::AttributeProto* reduction = scatter->add_attribute();
  reduction->set_name("reduction");
  reduction->set_type(onnx::AttributeProto::STRING);
  reduction->set_s("add");
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const graph::Graph& gr = r->graph;
  const graph::OpId op = *gr.FindOp("scatter");
  EXPECT_FALSE(gr.op(op).saves_output);
  for (const graph::Edge& e : gr.edges()) {
    if (e.to != op) continue;
    EXPECT_EQ(e.saved, gr.op(e.from).type == "Abs") << gr.op(e.from).name;
  }
  EXPECT_DOUBLE_EQ(graph::SavedActivationBytes(gr), 10 * 4 * 8.0);  // the computed index
}

// nn.Dropout in training (exported with TrainingMode.TRAINING): a one-byte mask per element, as
// CUDA keeps it, and the float noise (4 bytes an fp32 element) on a CPU; in eval mode nothing.
TEST(OnnxAutogradTest, TrainingDropoutKeepsAOneByteMaskOnAGpuAndTheNoiseOnACpu) {
  for (const bool training : {true, false}) {
    onnx::ModelProto m = Empty();
    onnx::GraphProto* g = m.mutable_graph();
    AddValue(g->add_input(), "x", {2, 4, 8});
    AddWeight(g, "w", {8});
    AddNode(g, "Mul", {"x", "w"}, {"a"});
    AddConstant(g, "ratio", {}, {0.1}, true);
    onnx::NodeProto* mode = AddNode(g, "Constant", {}, {"mode"});
    onnx::AttributeProto* value = mode->add_attribute();
    value->set_name("value");
    value->set_type(onnx::AttributeProto::TENSOR);
    value->mutable_t()->set_data_type(onnx::TensorProto::BOOL);
    value->mutable_t()->add_int32_data(training ? 1 : 0);
    AddNode(g, "Dropout", {"a", "ratio", "mode"}, {"y", "mask"})->set_name("dropout");
    auto r = Read(m);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_DOUBLE_EQ(OpOf(*r, "dropout").saved_bytes, training ? 2 * 4 * 8 : 0);
    if (training) {
      EXPECT_DOUBLE_EQ(OpOf(*r, "dropout").saved_bytes_cpu, 2 * 4 * 8 * 4);
    }
  }
}

// do_constant_folding=True turns an nn.Linear's Transpose(weight) into a new weight
// "onnx::MatMul_N": named after the module of the MatMul that reads it, with a warning.
TEST(OnnxAutogradTest, AFoldedWeightIsNamedAfterItsModule) {
  onnx::ModelProto m = Empty();
  onnx::GraphProto* g = m.mutable_graph();
  AddValue(g->add_input(), "x", {2, 4, 8});
  AddValue(g->add_input(), "onnx::MatMul_7", {8, 8});
  AddNode(g, "MatMul", {"x", "onnx::MatMul_7"}, {"y"})->set_name("/blocks.0/fc/MatMul");
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(OpOf(*r, "/blocks.0/fc/MatMul").parameters,
            std::vector<std::string>{"blocks.0.fc.weight"});
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("do_constant_folding=False"), std::string::npos);
}

}  // namespace
}  // namespace dplace::io
