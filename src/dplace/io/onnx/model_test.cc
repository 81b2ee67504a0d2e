// The ONNX importer on the bundled model exports (models/) and on small models built here.
#include "dplace/io/onnx/model.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <fstream>
#include <map>
#include <sstream>

#include "dplace/base/json_node.h"
#include "dplace/graph/training.h"
#include "dplace/io/load.h"
#include "dplace/io/onnx/file.h"
#include "dplace/io/onnx/test_model.h"

namespace dplace::io {
namespace {

std::string ModelPath(const std::string& name) {
  return std::string(DPLACE_SOURCE_DIR) + "/models/" + name + ".onnx";
}

// x [1,3,8,8] -> Conv(w [8,3,3,3] initializer, b [8] initializer) -> Relu -> Flatten [1,288]
// -> MatMul(fc [288,4], a parameter input as export_params=False writes it) -> y [1,4].
onnx::ModelProto SmallModel() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("small");
  AddValue(g->add_input(), "x", {1, 3, 8, 8});
  AddValue(g->add_input(), "fc", {288, 4});
  for (const auto& [name, dims] :
       std::vector<std::pair<std::string, std::vector<int64_t>>>{{"w", {8, 3, 3, 3}}, {"b", {8}}}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
  }
  AddNode(g, "Conv", {"x", "w", "b"}, {"c"});
  AddNode(g, "Relu", {"c"}, {"r"});
  AddNode(g, "Flatten", {"r"}, {"f"});
  AddNode(g, "MatMul", {"f", "fc"}, {"y"});
  AddValue(g->add_output(), "y", {1, 4});
  return m;
}

StatusOr<OnnxGraph> Read(const onnx::ModelProto& m) {
  return ReadOnnxModel(m.SerializeAsString(), "small");
}

TEST(OnnxTest, SmallModelCostsAreExact) {
  auto r = Read(SmallModel());
  ASSERT_TRUE(r.ok()) << r.status().message();
  const graph::Graph& g = r->graph;
  EXPECT_EQ(g.num_ops(), 4);
  EXPECT_EQ(g.edges().size(), 3u);
  double params = 0;
  for (const graph::Op& op : g.ops()) params += op.param_bytes;
  EXPECT_DOUBLE_EQ(params, (8 * 3 * 3 * 3 + 8 + 288 * 4) * 4.0);  // w, b, fc: float32
  // Conv: 288 outputs x 2 x (3 channels x 9) + bias; MatMul: 2 x 4 x 288.
  EXPECT_DOUBLE_EQ(g.op(graph::OpId(0)).flops, 288 * 2 * 27 + 288);
  EXPECT_DOUBLE_EQ(g.op(graph::OpId(1)).flops, 288);
  EXPECT_DOUBLE_EQ(g.op(graph::OpId(2)).flops, 0);
  EXPECT_DOUBLE_EQ(g.op(graph::OpId(3)).flops, 2 * 4 * 288);
  EXPECT_DOUBLE_EQ(g.tensor(g.op(graph::OpId(0)).first_output).bytes, 288 * 4);
  EXPECT_TRUE(r->warnings.empty());
}

// x [1,3,8,8] -> Conv -> c [1,8,6,6]; SiLU as torch.onnx writes it, Mul(c, Sigmoid(c)) -> m;
// MaxPool 2x2 -> p [1,8,3,3]; Flatten -> MatMul(fc [72,4]). PyTorch keeps c (SiLU's input), m
// (the pooling's input) and the pooling's int64 indices, and p (through Flatten's view) for fc's
// gradient: not the Sigmoid's result.
TEST(OnnxTest, DecomposedSiluKeepsWhatSiluKeepsAndMaxPoolItsIndices) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("silu");
  AddValue(g->add_input(), "x", {1, 3, 8, 8});
  for (const auto& [name, dims] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
           {"w", {8, 3, 3, 3}}, {"fc", {72, 4}}}) {
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
  }
  AddNode(g, "Conv", {"x", "w"}, {"c"});
  AddNode(g, "Sigmoid", {"c"}, {"s"});
  AddNode(g, "Mul", {"c", "s"}, {"m"});
  onnx::NodeProto* pool = AddNode(g, "MaxPool", {"m"}, {"p"});
  for (const char* attr : {"kernel_shape", "strides"}) {
    onnx::AttributeProto* a = pool->add_attribute();
    a->set_name(attr);
    a->set_type(onnx::AttributeProto::INTS);
    a->add_ints(2);
    a->add_ints(2);
  }
  AddNode(g, "Flatten", {"p"}, {"f"});
  AddNode(g, "MatMul", {"f", "fc"}, {"y"});
  AddValue(g->add_output(), "y", {1, 4});
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const graph::Graph& gr = r->graph;
  const graph::Op& sigmoid = gr.op(*gr.FindOp("Sigmoid_2"));
  EXPECT_FALSE(sigmoid.saves_output);
  for (const graph::Edge& e : gr.edges()) {
    if (gr.op(e.to).type == "Mul") {
      EXPECT_EQ(e.saved, gr.op(e.from).type == "Conv") << gr.op(e.from).name;
    }
  }
  EXPECT_DOUBLE_EQ(gr.op(*gr.FindOp("MaxPool_4")).saved_bytes, 72 * 8);
  EXPECT_DOUBLE_EQ(graph::SavedActivationBytes(gr), 288 * 4 + 288 * 4 + 72 * 8 + 72 * 4);
}

// A scalar parameter given as a graph input (export_params=False) and read through Exp, as CLIP's
// logit_scale is: a parameter (its op holds it, the device map names it), not data.
TEST(OnnxTest, AFloatScalarInputIsAParameterWhateverReadsIt) {
  onnx::ModelProto m = SmallModel();
  onnx::GraphProto* g = m.mutable_graph();
  onnx::ValueInfoProto* scale = g->add_input();
  scale->set_name("logit_scale");
  scale->mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::FLOAT);
  scale->mutable_type()->mutable_tensor_type()->mutable_shape();  // rank 0
  AddNode(g, "Exp", {"logit_scale"}, {"e"});
  AddNode(g, "Mul", {"y", "e"}, {"z"});
  g->mutable_output(0)->set_name("z");
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const graph::Op& exp = r->graph.op(*r->graph.FindOp("Exp_5"));
  EXPECT_EQ(exp.parameters, std::vector<std::string>{"logit_scale"});
  EXPECT_DOUBLE_EQ(exp.param_bytes, 4);
}

TEST(OnnxTest, UnknownOpTypeIsAWarningWithAGenericEstimate) {
  onnx::ModelProto m = SmallModel();
  onnx::NodeProto* n = AddNode(m.mutable_graph(), "FancyOp", {"y"}, {"z"});
  n->set_domain("com.example");
  m.add_opset_import()->set_domain("com.example");
  m.mutable_opset_import(1)->set_version(1);
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->warnings.size(), 1u);
  EXPECT_NE(r->warnings[0].find("'FancyOp'"), std::string::npos) << r->warnings[0];
  EXPECT_DOUBLE_EQ(r->graph.op(graph::OpId(4)).flops,
                   4);  // one per output element, shaped like its input
}

TEST(OnnxTest, WeightsInExternalDataAreNotNeeded) {
  onnx::ModelProto m = SmallModel();
  onnx::TensorProto* w = m.mutable_graph()->mutable_initializer(0);
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto* location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");  // does not exist: never read
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_DOUBLE_EQ(r->graph.op(graph::OpId(0)).param_bytes, (8 * 3 * 3 * 3 + 8) * 4.0);
}

// The weights' values are left out before parsing; names, types, shapes, small and integer
// tensors stay, and the model reads as the one with its values.
TEST(OnnxTest, WeightValuesAreLeftOutBeforeParsing) {
  onnx::ModelProto m = SmallModel();
  m.mutable_graph()->mutable_initializer(0)->set_raw_data(std::string(size_t{216} * 4, '\x01'));
  for (int i = 0; i < 8; ++i) m.mutable_graph()->mutable_initializer(1)->add_float_data(1);
  onnx::TensorProto* shape = m.mutable_graph()->add_initializer();
  shape->set_name("shape");
  shape->set_data_type(onnx::TensorProto::INT64);
  shape->add_dims(100);
  for (int i = 0; i < 100; ++i) shape->add_int64_data(i);
  const std::string bytes = m.SerializeAsString();
  const std::string light = WithoutWeights(bytes);
  ASSERT_FALSE(light.empty());
  EXPECT_LT(light.size(), bytes.size() - size_t{216} * 4);
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(light));
  const auto& init = back.graph().initializer();
  ASSERT_EQ(init.size(), 3);
  EXPECT_EQ(init[0].name(), "w");
  EXPECT_EQ(init[0].dims_size(), 4);
  EXPECT_TRUE(init[0].raw_data().empty());    // 216 floats: left out
  EXPECT_EQ(init[1].float_data_size(), 8);    // 8 floats: kept
  EXPECT_EQ(init[2].int64_data_size(), 100);  // integers (shapes, indices): kept
  EXPECT_EQ(back.graph().node_size(), m.graph().node_size());
  auto full = ReadOnnxModel(bytes, "small"), without = ReadOnnxModel(light, "small");
  ASSERT_TRUE(full.ok() && without.ok());
  EXPECT_EQ(full->graph.op(graph::OpId(0)).param_bytes,
            without->graph.op(graph::OpId(0)).param_bytes);
  // Not a protobuf encoding: nothing, and the loader hands the bytes to the parser as they are.
  EXPECT_TRUE(WithoutWeights(std::string("\x0f\xff\xff", 3)).empty());
  EXPECT_TRUE(WithoutWeights(bytes.substr(0, bytes.size() / 2)).empty());
}

// torch.onnx's folding turns a tied head's Transpose(embed.weight) into "onnx::MatMul_N" holding
// the transposed values: found by its values (a sampled check, then every element), so the head
// reads the embedding's parameter again; a same-shaped weight of other values is no tie, nor is
// one whose sizes claim more than its values hold.
TEST(OnnxTest, AFoldedTransposeOfANamedWeightIsThatWeight) {
  onnx::GraphProto g;
  auto add = [&g](const std::string& name, int64_t rows, int64_t cols, bool transposed) {
    onnx::TensorProto* t = g.add_initializer();
    t->set_name(name);
    t->set_data_type(onnx::TensorProto::FLOAT);
    t->add_dims(rows);
    t->add_dims(cols);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) {
        t->add_float_data(static_cast<float>(transposed ? c * rows + r : r * cols + c));
      }
    }
  };
  add("embed.weight", 10, 9, false);
  add("onnx::MatMul_7", 9, 10, true);   // embed.weight's transpose
  add("onnx::MatMul_8", 9, 10, false);  // the same sizes, other values
  onnx::ModelProto m;
  *m.mutable_graph() = g;
  const std::string bytes = m.SerializeAsString();
  EXPECT_EQ(FindFoldedTies(bytes), (FoldedTies{{"onnx::MatMul_7", "embed.weight"}}));
  EXPECT_TRUE(FindFoldedTies(WithoutWeights(bytes)).empty());  // no values: nothing to tell
  EXPECT_TRUE(FindFoldedTies(bytes.substr(0, bytes.size() / 2)).empty());
  m.mutable_graph()->mutable_initializer(1)->set_dims(0, int64_t{1} << 40);
  EXPECT_TRUE(FindFoldedTies(m.SerializeAsString()).empty());
}

TEST(OnnxTest, SymbolicInputShapeIsAnError) {
  onnx::ModelProto m = SmallModel();
  AddValue(m.mutable_graph()->mutable_input(0), "x", {1, 3, 8}, "width");
  auto r = Read(m);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("input 'x' has a symbolic dimension"), std::string::npos)
      << r.status().message();
}

// Models on which libonnx 1.12's shape inference crashes (SIGSEGV, SIGFPE) or that make no sense:
// each is one line naming the node, never a signal.
TEST(OnnxTest, MalformedNodesAreErrorsNotCrashes) {
  auto expect_error = [](const onnx::ModelProto& m, const std::string& expected) {
    auto r = Read(m);
    ASSERT_FALSE(r.ok()) << expected;
    EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().message();
  };
  auto with_attribute = [](const char* name, std::vector<int64_t> values) {
    onnx::ModelProto m = SmallModel();
    auto* attr = m.mutable_graph()->mutable_node(0)->add_attribute();
    attr->set_name(name);
    if (std::string(name) == "group") {
      attr->set_type(onnx::AttributeProto::INT);
      attr->set_i(values[0]);
    } else {
      attr->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : values) attr->add_ints(v);
    }
    return m;
  };
  expect_error(with_attribute("strides", {0, 0}), "strides must be at least 1, not 0");
  expect_error(with_attribute("group", {0}), "group must be at least 1, not 0");
  expect_error(with_attribute("pads", {-1, 0, 0, 0}), "pads must not be negative");
  {
    onnx::ModelProto m = SmallModel();
    m.mutable_opset_import(0)->set_version(17);
    AddNode(m.mutable_graph(), "Shape", {""}, {"s"});
    expect_error(m, "(Shape): its required input 0 ('data') is missing");
  }
  {
    onnx::ModelProto m = SmallModel();
    m.mutable_graph()->mutable_initializer(0)->clear_dims();
    m.mutable_graph()->mutable_initializer(0)->add_dims(8);
    m.mutable_graph()->mutable_node(0)->set_op_type("ConvTranspose");
    expect_error(m, "(ConvTranspose): its weight has rank 1");
  }
  {
    onnx::ModelProto m = SmallModel();
    m.mutable_opset_import(0)->set_version(1);
    AddValue(m.mutable_graph()->add_input(), "seq", {5});
    AddNode(m.mutable_graph(), "LSTM", {"seq", "w", "w"}, {"h"});
    expect_error(m, "(LSTM): input 0 has rank 1, needs 3");
  }
  {
    onnx::ModelProto m = SmallModel();
    AddNode(m.mutable_graph(), "Relu", {"c"}, {"r"});
    expect_error(m, "its output 'r' is already produced elsewhere");
  }
  {
    onnx::ModelProto m = SmallModel();
    m.mutable_graph()
        ->mutable_input(0)
        ->mutable_type()
        ->mutable_tensor_type()
        ->mutable_shape()
        ->mutable_dim(0)
        ->set_dim_value(-5);
    expect_error(m, "input 'x': dimension 0 is -5, a size cannot be negative");
  }
  for (int64_t version : {0, 10000}) {
    onnx::ModelProto m = SmallModel();
    m.mutable_opset_import(0)->set_version(version);
    expect_error(m, "opset " + std::to_string(version) + " of the default domain");
  }
}

TEST(OnnxTest, RandomAndTruncatedBytesAreErrors) {
  EXPECT_FALSE(ReadOnnxModel("\x13\x37 not a model at all \xff\xfe", "x").ok());
  std::ifstream in(ModelPath("resnet50"), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string whole = ss.str();
  auto r = ReadOnnxModel(whole.substr(0, whole.size() / 2), "x");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("not an ONNX model"), std::string::npos);
}

// Every bundled model: one op per node, one edge per node input produced by another node.
class BundledModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(BundledModelTest, CountsAreTheFilesAndCostsArePositive) {
  std::ifstream in(ModelPath(GetParam()), std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  onnx::ModelProto m;
  ASSERT_TRUE(m.ParseFromString(ss.str()));
  std::set<std::string> produced;
  size_t edges = 0;
  for (const auto& node : m.graph().node()) {
    for (const auto& i : node.input()) edges += produced.count(i);
    for (const auto& o : node.output()) produced.insert(o);
  }
  auto loaded = LoadGraph(ModelPath(GetParam()));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->format, GraphFormat::kOnnx);
  EXPECT_EQ(loaded->graph->num_ops(), m.graph().node_size());
  EXPECT_EQ(loaded->graph->edges().size(), edges);
  double flops = 0, params = 0;
  for (const graph::Op& op : loaded->graph->ops()) {
    flops += op.flops;
    params += op.param_bytes;
  }
  EXPECT_GT(flops, 1e9);
  EXPECT_GT(params, 1e6);
  EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings[0];
  // Its training step: a backward op per forward op, still acyclic (the builder checks).
  auto training = graph::ExpandTraining(*loaded->graph);
  ASSERT_TRUE(training.ok()) << training.status().message();
  int forward = 0, backward = 0;
  for (const graph::Op& op : training->ops()) {
    forward += op.kind == graph::OpKind::kForward;
    backward += op.kind == graph::OpKind::kBackward;
  }
  EXPECT_EQ(forward, m.graph().node_size());
  EXPECT_EQ(backward, forward);
  EXPECT_EQ(static_cast<int>(training->TopologicalOrder().size()), training->num_ops());
}

INSTANTIATE_TEST_SUITE_P(Models, BundledModelTest,
                         ::testing::Values("inception_v3", "resnet50", "vgg16", "mobilenet_v2",
                                           "bert_encoder", "rnnlm", "nmt", "wavenet"));

// nn.LSTM / nn.GRU / nn.Transformer at opsets 13 and 17, torchvision segmentation and detection
// models:
// every shape inferred (ONNX's inference plus dplace's shape arithmetic), every op type costed.
class CoverageModelTest : public ::testing::TestWithParam<const char*> {};

TEST_P(CoverageModelTest, ImportsWithoutWarnings) {
  auto loaded =
      LoadGraph(std::string(DPLACE_SOURCE_DIR) + "/testdata/onnx/" + GetParam() + ".onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_TRUE(loaded->warnings.empty()) << loaded->warnings[0];
  double flops = 0;
  for (const graph::Op& op : loaded->graph->ops()) flops += op.flops;
  EXPECT_GT(flops, 1e6);
}

INSTANTIATE_TEST_SUITE_P(Coverage, CoverageModelTest,
                         ::testing::Values("lstm_opset13", "lstm_opset17", "gru_opset13",
                                           "gru_opset17", "transformer_opset13",
                                           "transformer_opset17", "fcn_resnet50_opset13",
                                           "deeplabv3_mobilenet_opset13", "ssdlite_opset13",
                                           "fasterrcnn_opset13"));

TEST(OnnxTest, LstmFlopsFollowTheFormula) {
  auto loaded = LoadGraph(std::string(DPLACE_SOURCE_DIR) + "/testdata/onnx/lstm_opset17.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  double lstm = 0;
  int count = 0;
  for (const graph::Op& op : loaded->graph->ops()) {
    if (op.type != "LSTM") continue;
    lstm += op.flops;
    ++count;
  }
  // Two bidirectional layers, 12 steps, batch 2, hidden 128, inputs 64 then 256:
  // 2 x 12 x 2 x 2 x 512 x (in + 128) + 12 x 2 x 2 x 128 x (3 x 4 + 2) per layer.
  EXPECT_EQ(count, 2);
  EXPECT_DOUBLE_EQ(lstm, 2.0 * 12 * 2 * 2 * 512 * (64 + 128) +
                             2.0 * 12 * 2 * 2 * 512 * (256 + 128) + 2 * (12.0 * 2 * 2 * 128 * 14));
}

TEST(OnnxTest, ComputedReshapesAreSized) {
  // nn.MultiheadAttention slices its fused projection with bounds computed from Shape ops, which
  // ONNX's own inference cannot follow.
  auto loaded =
      LoadGraph(std::string(DPLACE_SOURCE_DIR) + "/testdata/onnx/transformer_opset13.onnx");
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const graph::Graph& g = *loaded->graph;
  const auto slice = g.FindOp("/encoder/layers.0/self_attn/Slice");
  ASSERT_TRUE(slice.has_value());
  // The query third of the fused projection [10, 2, 192] (sequence, batch, 3 x 64), float32.
  EXPECT_DOUBLE_EQ(g.tensor(g.op(*slice).first_output).bytes, 10 * 2 * 64 * 4);
}

// torchvision's detection transform, in small: resize by a floating-point scale, then pad height
// and width up to a multiple of 8, with the pads computed as torchvision's export computes them —
// Ceil of a float division, a [pairs, 2] tensor reversed with a negative-step Slice, transposed and
// flattened.
TEST(OnnxTest, FloatingPointShapeArithmeticIsFollowed) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("transform");
  AddValue(g->add_input(), "x", {1, 3, 10, 12});
  AddConstant(g, "scales", {4}, {1, 1, 1.5, 1.25}, true);
  AddNode(g, "Resize", {"x", "", "scales"}, {"resized"});  // [1, 3, 15, 15]
  AddNode(g, "Shape", {"resized"}, {"shape"});
  AddConstant(g, "two", {1}, {2}, false);
  AddConstant(g, "four", {1}, {4}, false);
  AddConstant(g, "zero", {1}, {0}, false);
  AddNode(g, "Slice", {"shape", "two", "four", "zero"}, {"hw"});  // [15, 15]
  SetInt(AddNode(g, "Cast", {"hw"}, {"hw_f"}), "to", onnx::TensorProto::FLOAT);
  AddConstant(g, "eight", {}, {8}, true);
  AddNode(g, "Div", {"hw_f", "eight"}, {"blocks"});
  AddNode(g, "Ceil", {"blocks"}, {"blocks_up"});
  AddNode(g, "Mul", {"blocks_up", "eight"}, {"padded_f"});
  SetInt(AddNode(g, "Cast", {"padded_f"}, {"padded"}), "to", onnx::TensorProto::INT64);
  AddNode(g, "Sub", {"padded", "hw"}, {"extra"});  // [1, 1]: 15 up to 16
  // (begin, end) pairs from the last axis back: W (0, 1), H (0, 1), C (0, 0), N (0, 0).
  AddConstant(g, "zeros", {4}, {0, 0, 0, 0}, false);
  AddNode(g, "Gather", {"extra", "zero"}, {"extra_h"});
  AddConstant(g, "one", {1}, {1}, false);
  AddNode(g, "Gather", {"extra", "one"}, {"extra_w"});
  AddConstant(g, "z1", {1}, {0}, false);
  SetInt(AddNode(g, "Concat", {"z1", "extra_w", "z1", "extra_h", "zeros"}, {"flat"}), "axis", 0);
  AddConstant(g, "pairs_shape", {2}, {-1, 2}, false);
  AddNode(g, "Reshape", {"flat", "pairs_shape"}, {"pairs"});  // [4, 2]
  AddConstant(g, "minus_one", {1}, {-1}, false);
  AddConstant(g, "to_start", {1}, {-9223372036854775807.0}, false);
  AddNode(g, "Slice", {"pairs", "minus_one", "to_start", "zero", "minus_one"}, {"reversed"});
  SetInts(AddNode(g, "Transpose", {"reversed"}, {"by_side"}), "perm", {1, 0});
  AddNode(g, "Reshape", {"by_side", "minus_one"}, {"pads"});  // [0, 0, 0, 0, 0, 0, 1, 1]
  AddNode(g, "Pad", {"resized", "pads"}, {"y"});
  auto r = Read(m);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const graph::Graph& g2 = r->graph;
  const auto resize = g2.FindOp("Resize_2");
  const auto pad = g2.FindOp(g->node(g->node_size() - 1).name());
  ASSERT_TRUE(resize.has_value() && pad.has_value());
  EXPECT_DOUBLE_EQ(g2.tensor(g2.op(*resize).first_output).bytes, 3 * 15 * 15 * 4.0);
  EXPECT_DOUBLE_EQ(g2.tensor(g2.op(*pad).first_output).bytes, 3 * 16 * 16 * 4.0);
  EXPECT_TRUE(r->warnings.empty()) << r->warnings[0];
}

// FLOPs per op type of a test export.
std::map<std::string, double> FlopsByType(const graph::Graph& g) {
  std::map<std::string, double> flops;
  for (const graph::Op& op : g.ops()) flops[op.type] += op.flops;
  return flops;
}

TEST(OnnxTest, DetectionModelsAreCostedThroughTheirPostProcessing) {
  const std::string dir = std::string(DPLACE_SOURCE_DIR) + "/testdata/onnx/";
  auto ssd = LoadGraph(dir + "ssdlite_opset13.onnx");
  auto loaded = LoadGraph(dir + "fasterrcnn_opset13.onnx");
  ASSERT_TRUE(ssd.ok() && loaded.ok());
  // torchvision's figures for one 320 x 320 image: 0.58 G multiply-accumulates in SSDlite's
  // convolutions, 0.72 G in Faster R-CNN's (MobileNet-V3 FPN) backbone and RPN.
  EXPECT_NEAR(FlopsByType(*ssd->graph)["Conv"] / 2, 0.58e9, 0.03 * 0.58e9);
  auto frcnn = FlopsByType(*loaded->graph);
  EXPECT_NEAR(frcnn["Conv"] / 2, 0.72e9, 0.03 * 0.72e9);
  // The box head runs on the proposals NMS keeps, a data-dependent count taken at its upper
  // bound: the model's 150 post-NMS proposals, through fc6 (256 x 7 x 7 -> 1024), fc7 (1024 ->
  // 1024), the class (91) and box (364) predictors, with biases.
  const double per_proposal =
      2.0 * (12544 * 1024 + 1024 * 1024 + 1024 * 91 + 1024 * 364) + (1024 + 1024 + 91 + 364);
  EXPECT_DOUBLE_EQ(frcnn["Gemm"], 150 * per_proposal);
  // batched NMS runs inside an If: costed by its branch, and fed by what the branch reads.
  EXPECT_GT(frcnn["If"], 0);
  const graph::Graph& g = *loaded->graph;
  for (graph::OpId id{0}; id < g.num_ops(); ++id) {
    if (g.op(id).type == "If") {
      EXPECT_GE(g.Predecessors(id).size(), 2u) << g.op(id).name;
    }
  }
}

TEST(OnnxTest, ResNet50FlopsMatchThePublishedCount) {
  auto loaded = LoadGraph(ModelPath("resnet50"));
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  double flops = 0, params = 0;
  for (const graph::Op& op : loaded->graph->ops()) {
    flops += op.flops;
    params += op.param_bytes;
  }
  // Exported at batch 32; 4.09 G multiply-accumulates per image (torchvision's figure).
  EXPECT_NEAR(flops / 32, 2 * 4.09e9, 0.05 * 2 * 4.09e9);
  // 25.56 M parameters in torchvision; the export folds batch norms into the convolutions, which
  // then carry biases: 25,530,472 float32 values here.
  EXPECT_NEAR(params / 4, 25.5e6, 0.1e6);
}

}  // namespace
}  // namespace dplace::io
