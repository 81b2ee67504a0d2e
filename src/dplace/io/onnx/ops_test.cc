// A test per op type of the ONNX op table: each row's FLOPs rule on known shapes, and where the row
// has them, its shape rule (the output shape from the inputs' shapes and small values) and its
// small-tensor kernel (the output's value). Every row must have a case.
#include "dplace/io/onnx/ops.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace dplace::io {
namespace {

struct Tensor {
  Dims dims;
  std::optional<std::vector<double>> values;  // small tensors the interpreter holds
  bool real = false;
};
Tensor T(Dims dims) { return {.dims = std::move(dims)}; }
Tensor V(Dims dims, std::vector<double> values) {
  return {.dims = std::move(dims), .values = std::move(values)};
}
Tensor R(Dims dims, std::vector<double> values) {
  return {.dims = std::move(dims), .values = std::move(values), .real = true};
}

struct Attribute {
  std::string name;
  std::vector<int64_t> ints;
  bool list = false;
};
Attribute I(std::string name, int64_t v) { return {.name = std::move(name), .ints = {v}}; }
Attribute L(std::string name, std::vector<int64_t> v) {
  return {.name = std::move(name), .ints = std::move(v), .list = true};
}

struct OpCase {
  std::string type;
  std::vector<Tensor> inputs;
  std::vector<Attribute> attrs;
  Dims out;                                  // the first output's shape
  double flops;                              // with these shapes; -1: the type has no formula
  std::optional<std::vector<double>> value;  // the first output's value, for rows with a kernel
};

// An element-wise op of one input: one FLOP per element, the shape unchanged.
OpCase Elementwise(std::string type) {
  return {.type = std::move(type), .inputs = {T({2, 3})}, .out = {2, 3}, .flops = 6};
}
// An op with no FLOPs rule change from its input shape: a normalisation costing `per` per element.
OpCase Normalisation(std::string type, double per) {
  return {.type = std::move(type), .inputs = {T({2, 3, 4})}, .out = {2, 3, 4}, .flops = per * 24};
}
// A reduction: one FLOP per input element.
OpCase Reduction(std::string type) {
  return {.type = std::move(type),
          .inputs = {T({3, 4})},
          .attrs = {L("axes", {1})},
          .out = {3, 1},
          .flops = 12};
}

std::vector<OpCase> Cases() {
  std::vector<OpCase> cases = {
      {"Abs", {V({3}, {-1, 2, -3})}, {}, {3}, 3, {{1, 2, 3}}},
      {"Add", {V({1, 2}, {1, 2}), V({2, 1}, {10, 20})}, {}, {2, 2}, 4, {{11, 12, 21, 22}}},
      {"And", {V({2}, {1, 0}), V({2}, {1, 1})}, {}, {2}, 2, {{1, 0}}},
      {"ArgMax", {T({4, 5})}, {I("axis", 0)}, {1, 5}, 20, {}},
      {"ArgMin", {T({4, 5})}, {I("axis", 0)}, {1, 5}, 20, {}},
      {"AveragePool", {T({1, 3, 8, 8})}, {L("kernel_shape", {2, 2})}, {1, 3, 4, 4}, 192, {}},
      {"BatchNormalization",
       {T({2, 4, 3, 3}), T({4}), T({4}), T({4}), T({4})},
       {},
       {2, 4, 3, 3},
       144,
       {}},
      {"Cast", {R({2}, {1.7, -2.5})}, {I("to", 7)}, {2}, 0, {{1, -2}}},
      {"CastLike", {T({2, 3}), T({})}, {}, {2, 3}, 0, {}},
      {"Ceil", {R({2}, {1.2, -1.5})}, {}, {2}, 2, {{2, -1}}},
      {"Compress", {T({4}), T({4})}, {}, {4}, 0, {}},
      {"Concat", {V({2}, {1, 2}), V({1}, {3})}, {I("axis", 0)}, {3}, 0, {{1, 2, 3}}},
      {"Constant", {}, {L("value_ints", {4, 5})}, {2}, 0, {{4, 5}}},
      {"ConstantOfShape", {V({2}, {2, 3})}, {}, {2, 3}, 0, {{0, 0, 0, 0, 0, 0}}},
      // 2 x 576 outputs x 3 input channels x 3x3 kernel, plus the bias.
      {"Conv", {T({1, 3, 8, 8}), T({16, 3, 3, 3}), T({16})}, {}, {1, 16, 6, 6}, 31680, {}},
      // 2 x 100 inputs x 2 output channels x 3x3 kernel.
      {"ConvTranspose", {T({1, 4, 5, 5}), T({4, 2, 3, 3})}, {}, {1, 2, 7, 7}, 3600, {}},
      {"CumSum", {T({3, 4}), V({}, {0})}, {}, {3, 4}, 12, {}},
      {"DepthToSpace", {T({1, 8, 2, 2})}, {I("blocksize", 2)}, {1, 2, 4, 4}, 0, {}},
      {"DequantizeLinear", {T({2, 3}), T({})}, {}, {2, 3}, 6, {}},
      {"Div", {V({2}, {7, -7}), V({}, {2})}, {}, {2}, 2, {{3, -3}}},  // integer: truncated
      {"Dropout", {T({2, 3})}, {}, {2, 3}, 0, {}},
      {"Einsum", {T({2, 3}), T({3, 4})}, {}, {2, 4}, -1, {}},
      {"Equal", {V({3}, {1, 2, 3}), V({3}, {1, 0, 3})}, {}, {3}, 3, {{1, 0, 1}}},
      {"Expand", {T({3, 1}), V({3}, {2, 1, 4})}, {}, {2, 3, 4}, 0, {}},
      {"EyeLike", {T({3, 3})}, {}, {3, 3}, 0, {}},
      {"Flatten", {V({2, 2, 1}, {1, 2, 3, 4})}, {}, {2, 2}, 0, {{1, 2, 3, 4}}},
      {"Floor", {R({2}, {1.5, -1.5})}, {}, {2}, 2, {{1, -2}}},
      // 2 x 5 steps x 2 batch x 48 gate rows x (8 + 16), plus 160 x (3 x 3 + 2) activations.
      {"GRU", {T({5, 2, 8}), T({1, 48, 8}), T({1, 48, 16})}, {}, {5, 1, 2, 16}, 24800, {}},
      {"Gather", {V({3}, {10, 20, 30}), V({2}, {2, 0})}, {}, {2}, 0, {{30, 10}}},
      {"GatherElements", {T({3, 4}), T({3, 2})}, {I("axis", 1)}, {3, 2}, 0, {}},
      {"GatherND", {T({3, 4}), T({2, 2})}, {}, {2}, 0, {}},
      {"Gemm", {T({4, 8}), T({8, 16}), T({16})}, {}, {4, 16}, 1088, {}},
      {"Gemm", {T({8, 4}), T({8, 16})}, {I("transA", 1)}, {4, 16}, 1024, {}},
      {"GlobalAveragePool", {T({1, 8, 4, 4})}, {}, {1, 8, 1, 1}, 128, {}},
      {"GlobalLpPool", {T({1, 8, 4, 4})}, {}, {1, 8, 1, 1}, 128, {}},
      {"GlobalMaxPool", {T({1, 8, 4, 4})}, {}, {1, 8, 1, 1}, 128, {}},
      {"Greater", {V({2}, {1, 3}), V({}, {2})}, {}, {2}, 2, {{0, 1}}},
      {"GreaterOrEqual", {T({2, 3}), T({3})}, {}, {2, 3}, 6, {}},
      {"Hardmax", {T({2, 5})}, {}, {2, 5}, 10, {}},
      {"Identity", {V({2}, {5, 6})}, {}, {2}, 0, {{5, 6}}},
      {"If", {T({})}, {}, {}, -1, {}},  // costed by its branches (the importer)
      {"LSTM", {T({5, 2, 8}), T({1, 64, 8}), T({1, 64, 16})}, {}, {5, 1, 2, 16}, 32960, {}},
      {"Less", {V({2}, {1, 3}), V({}, {2})}, {}, {2}, 2, {{1, 0}}},
      {"LessOrEqual", {T({2, 3}), T({3})}, {}, {2, 3}, 6, {}},
      {"LpPool",
       {T({1, 2, 4, 4})},
       {L("kernel_shape", {2, 2}), L("strides", {2, 2})},
       {1, 2, 2, 2},
       32,
       {}},
      {"MatMul", {T({2, 3, 4}), T({4, 5})}, {}, {2, 3, 5}, 240, {}},
      {"MatMulInteger", {T({3, 4}), T({4, 5})}, {}, {3, 5}, 120, {}},
      {"Max", {V({2}, {1, 5}), V({2}, {3, 2})}, {}, {2}, 2, {{3, 5}}},
      {"MaxPool", {T({1, 3, 8, 8})}, {L("kernel_shape", {3, 3})}, {1, 3, 6, 6}, 972, {}},
      {"MaxRoiPool",
       {T({1, 4, 8, 8}), T({2, 5})},
       {L("kernel_shape", {2, 2})},
       {2, 4, 2, 2},
       128,
       {}},
      {"Min", {V({2}, {1, 5}), V({2}, {3, 2})}, {}, {2}, 2, {{1, 2}}},
      {"Mod", {V({2}, {7, -7}), V({}, {3})}, {}, {2}, 2, {{1, -1}}},
      {"Mul", {V({2}, {2, 3}), V({}, {4})}, {}, {2}, 2, {{8, 12}}},
      {"Neg", {V({2}, {1, -2})}, {}, {2}, 2, {{-1, 2}}},
      // Every pair of the 10 boxes for each of 3 classes; at most 5 kept per class.
      {"NonMaxSuppression", {T({1, 10, 4}), T({1, 3, 10}), V({1}, {5})}, {}, {15, 3}, 300, {}},
      {"NonZero", {T({2, 3})}, {}, {2, 6}, 0, {}},
      {"Not", {V({2}, {0, 1})}, {}, {2}, 2, {{1, 0}}},
      {"OneHot", {T({4}), V({}, {10}), T({2})}, {}, {4, 10}, 0, {}},
      {"Or", {V({2}, {0, 1}), V({2}, {0, 0})}, {}, {2}, 2, {{0, 1}}},
      {"Pad", {T({1, 3}), V({4}, {0, 1, 0, 2})}, {}, {1, 6}, 0, {}},
      {"Pow", {V({2}, {2, 3}), V({}, {2})}, {}, {2}, 2, {{4, 9}}},
      {"RNN", {T({5, 2, 8}), T({1, 16, 8}), T({1, 16, 16})}, {}, {5, 1, 2, 16}, 8480, {}},
      {"Range", {V({}, {0}), V({}, {5}), V({}, {2})}, {}, {3}, 0, {{0, 2, 4}}},
      {"Reciprocal", {R({2}, {2, 4})}, {}, {2}, 2, {{0.5, 0.25}}},
      {"ReduceMax",
       {V({2, 2}, {1, 4, 3, 2})},
       {L("axes", {1}), I("keepdims", 0)},
       {2},
       4,
       {{4, 3}}},
      {"ReduceMin",
       {V({2, 2}, {1, 4, 3, 2})},
       {L("axes", {1}), I("keepdims", 0)},
       {2},
       4,
       {{1, 2}}},
      {"ReduceProd", {V({2, 2}, {1, 4, 3, 2})}, {L("axes", {0})}, {1, 2}, 4, {{3, 8}}},
      {"ReduceSum", {V({2, 2}, {1, 4, 3, 2})}, {I("keepdims", 0)}, {}, 4, {{10}}},
      {"Reshape",
       {V({2, 3}, {1, 2, 3, 4, 5, 6}), V({2}, {3, -1})},
       {},
       {3, 2},
       0,
       {{1, 2, 3, 4, 5, 6}}},
      {"Resize", {T({1, 1, 2, 2}), T({0}), R({4}, {1, 1, 2, 2})}, {}, {1, 1, 4, 4}, 16, {}},
      {"ReverseSequence", {T({4, 2}), T({2})}, {}, {4, 2}, 0, {}},
      {"RoiAlign", {T({1, 4, 8, 8}), T({3, 4}), T({3})}, {}, {3, 4, 2, 2}, 192, {}},
      {"Round", {R({3}, {0.5, 1.5, -1.4})}, {}, {3}, 3, {{0, 2, -1}}},  // half to even
      {"Scatter", {T({3, 3}), T({2, 3}), T({2, 3})}, {}, {3, 3}, 0, {}},
      {"ScatterElements", {T({3, 3}), T({2, 3}), T({2, 3})}, {}, {3, 3}, 0, {}},
      {"ScatterND", {T({4, 4}), T({2, 1}), T({2, 4})}, {}, {4, 4}, 0, {}},
      {"Shape", {T({2, 3, 4})}, {I("start", 1)}, {2}, 0, {{3, 4}}},
      {"Size", {T({2, 3})}, {}, {}, 0, {{6}}},
      {"Slice",
       {V({5}, {0, 1, 2, 3, 4}), V({1}, {1}), V({1}, {-1}), V({1}, {0}), V({1}, {2})},
       {},
       {2},
       0,
       {{1, 3}}},
      {"SpaceToDepth", {T({1, 2, 4, 4})}, {I("blocksize", 2)}, {1, 8, 2, 2}, 0, {}},
      {"Split", {T({4, 6})}, {I("axis", 1)}, {4, 3}, 0, {}},
      {"Sqrt", {R({2}, {4, 9})}, {}, {2}, 2, {{2, 3}}},
      {"Squeeze", {V({1, 2, 1}, {7, 8}), V({1}, {0})}, {}, {2, 1}, 0, {{7, 8}}},
      {"Sub", {V({2}, {5, 6}), V({2}, {1, 2})}, {}, {2}, 2, {{4, 4}}},
      {"Tile", {T({2, 3}), V({2}, {2, 1})}, {}, {4, 3}, 0, {}},
      {"TopK", {T({3, 10}), V({1}, {4})}, {}, {3, 4}, 30, {}},
      {"Transpose",
       {V({2, 3}, {1, 2, 3, 4, 5, 6})},
       {L("perm", {1, 0})},
       {3, 2},
       0,
       {{1, 4, 2, 5, 3, 6}}},
      {"Trilu", {T({3, 3})}, {}, {3, 3}, 0, {}},
      {"Unsqueeze", {V({2}, {7, 8}), V({1}, {0})}, {}, {1, 2}, 0, {{7, 8}}},
      {"Upsample", {T({1, 1, 2, 2}), R({4}, {1, 1, 2, 3})}, {}, {1, 1, 4, 6}, 24, {}},
      {"Where", {V({2}, {1, 0}), V({2}, {1, 2}), V({2}, {3, 4})}, {}, {2}, 2, {{1, 4}}},
  };
  for (const char* type : {"Acos",
                           "Acosh",
                           "Asin",
                           "Asinh",
                           "Atan",
                           "Atanh",
                           "BitShift",
                           "Celu",
                           "Clip",
                           "Cos",
                           "Cosh",
                           "Elu",
                           "Erf",
                           "Exp",
                           "Gelu",
                           "HardSigmoid",
                           "HardSwish",
                           "IsInf",
                           "IsNaN",
                           "LeakyRelu",
                           "Log",
                           "Mean",
                           "Mish",
                           "PRelu",
                           "QuantizeLinear",
                           "Relu",
                           "Selu",
                           "Shrink",
                           "Sigmoid",
                           "Sign",
                           "Sin",
                           "Sinh",
                           "Softplus",
                           "Softsign",
                           "Sum",
                           "Tan",
                           "Tanh",
                           "ThresholdedRelu",
                           "Xor"}) {
    cases.push_back(Elementwise(type));
  }
  cases.push_back(Normalisation("GroupNormalization", 5));
  cases.push_back(Normalisation("InstanceNormalization", 5));
  cases.push_back(Normalisation("LRN", 5));
  cases.push_back(Normalisation("LayerNormalization", 5));
  cases.push_back(Normalisation("MeanVarianceNormalization", 5));
  cases.push_back(Normalisation("LogSoftmax", 3));
  cases.push_back(Normalisation("LpNormalization", 3));
  cases.push_back(Normalisation("Softmax", 3));
  for (const char* type : {"ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMean",
                           "ReduceSumSquare"}) {
    cases.push_back(Reduction(type));
  }
  return cases;
}

// The node of a case: inputs in0, in1, ..., output out; and what is known of its inputs.
struct Node {
  onnx::NodeProto proto;
  Known known;
};

Node MakeNode(const OpCase& c) {
  Node n;
  n.proto.set_op_type(c.type);
  n.proto.add_output("out");
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const std::string name = "in" + std::to_string(i);
    n.proto.add_input(name);
    n.known.shapes[name] = c.inputs[i].dims;
    if (c.inputs[i].values) {
      n.known.values[name] = {c.inputs[i].dims, *c.inputs[i].values, c.inputs[i].real};
    }
  }
  for (const Attribute& a : c.attrs) {
    onnx::AttributeProto* attr = n.proto.add_attribute();
    attr->set_name(a.name);
    if (a.list) {
      attr->set_type(onnx::AttributeProto::INTS);
      for (int64_t v : a.ints) attr->add_ints(v);
    } else {
      attr->set_type(onnx::AttributeProto::INT);
      attr->set_i(a.ints[0]);
    }
  }
  return n;
}

OnnxNodeShapes ShapesOf(const OpCase& c) {
  OnnxNodeShapes s{.op_type = c.type, .inputs = {}, .outputs = {c.out}};
  for (const Tensor& t : c.inputs) s.inputs.push_back(t.dims);
  for (const Attribute& a : c.attrs) {
    if (a.name == "kernel_shape") s.kernel_shape = a.ints;
    if (a.name == "transA") s.trans_a = a.ints[0];
  }
  return s;
}

class OnnxOpTest : public testing::TestWithParam<OpCase> {};

TEST_P(OnnxOpTest, RulesOfTheRowHold) {
  const OpCase& c = GetParam();
  const OnnxOp& op = OnnxOpOf(c.type);
  ASSERT_EQ(op.type, c.type) << "not in the table";
  EXPECT_DOUBLE_EQ(OnnxNodeFlops(ShapesOf(c)), c.flops);
  const Node node = MakeNode(c);
  const NodeInputs in(node.proto, node.known);
  if (op.shape) {
    const std::optional<Dims> dims = op.shape(in);
    ASSERT_TRUE(dims.has_value()) << "the shape rule gives nothing";
    EXPECT_EQ(*dims, c.out);
  }
  if (op.kernel) {
    ASSERT_TRUE(c.value.has_value()) << "a row with a kernel needs the expected value";
    const std::optional<Value> v = op.kernel(in);
    ASSERT_TRUE(v.has_value()) << "the kernel gives nothing";
    EXPECT_EQ(v->dims, c.out);
    EXPECT_EQ(v->data, *c.value);
  } else {
    EXPECT_FALSE(c.value.has_value()) << "the row has no kernel";
  }
}

std::string CaseName(const testing::TestParamInfo<OpCase>& info) {
  return info.param.type + "_" + std::to_string(info.index);
}

INSTANTIATE_TEST_SUITE_P(Table, OnnxOpTest, testing::ValuesIn(Cases()), CaseName);

TEST(OnnxOpTableTest, EveryRowHasACase) {
  std::set<std::string> covered;
  for (const OpCase& c : Cases()) covered.insert(c.type);
  for (const OnnxOp& op : OnnxOps()) {
    EXPECT_TRUE(covered.count(std::string(op.type))) << op.type << " has no case";
  }
  EXPECT_EQ(covered.size(), OnnxOps().size());
}

TEST(OnnxOpTableTest, SortedWithoutDuplicatesAndUnknownTypesAreConservative) {
  const std::vector<OnnxOp>& ops = OnnxOps();
  for (size_t i = 1; i < ops.size(); ++i) EXPECT_LT(ops[i - 1].type, ops[i].type);
  const OnnxOp& unknown = OnnxOpOf("MyCustomOp");
  EXPECT_TRUE(unknown.type.empty());
  EXPECT_FALSE(unknown.flops);
  EXPECT_TRUE(unknown.saved.output);  // keeps its output and every input
  EXPECT_TRUE(unknown.saved.Input(1, 2, [](int) { return false; }));
  EXPECT_DOUBLE_EQ(OnnxNodeFlops({.op_type = "MyCustomOp", .inputs = {}, .outputs = {{4}}}), -1);
}

// Values the ops are not defined on give no value, never a crash.
TEST(OnnxOpTableTest, KernelsRefuseWhatTheOpIsNotDefinedOn) {
  auto value_of = [](const OpCase& c) {
    const Node node = MakeNode(c);
    return OnnxOpOf(c.type).kernel(NodeInputs(node.proto, node.known));
  };
  EXPECT_FALSE(value_of({"Div", {V({1}, {1}), V({1}, {0})}, {}, {1}, 1, {}}));
  EXPECT_FALSE(value_of({"Mod", {V({1}, {1}), V({1}, {0})}, {}, {1}, 1, {}}));
  EXPECT_FALSE(value_of({"Reciprocal", {V({1}, {0})}, {}, {1}, 1, {}}));
  EXPECT_FALSE(value_of({"Gather", {V({2}, {1, 2}), V({1}, {5})}, {}, {1}, 0, {}}));
  EXPECT_FALSE(value_of({"Transpose", {V({2}, {1, 2})}, {L("perm", {3})}, {2}, 0, {}}));
  EXPECT_FALSE(value_of({"Add", {V({2}, {1, 2}), V({3}, {1, 2, 3})}, {}, {2}, 2, {}}));
  EXPECT_FALSE(value_of({"Range", {V({}, {0}), V({}, {5}), V({}, {0})}, {}, {0}, 0, {}}));
}

// What autograd keeps, as PyTorch's derivatives.yaml says, for the op families.
TEST(OnnxOpTableTest, AutogradTraits) {
  auto keeps = [](const char* type, int slot, int num_inputs, bool others_require_grad) {
    return OnnxOpOf(type).saved.Input(slot, num_inputs, [&](int) { return others_require_grad; });
  };
  EXPECT_EQ(OnnxOpOf("Reshape").view, OnnxView::kReshape);
  EXPECT_EQ(OnnxOpOf("Add").view, OnnxView::kNone);
  EXPECT_FALSE(OnnxOpOf("Shape").differentiable);
  EXPECT_TRUE(OnnxOpOf("Relu").saved.output);
  EXPECT_FALSE(keeps("Relu", 0, 1, true));
  EXPECT_TRUE(keeps("Erf", 0, 1, true));
  EXPECT_TRUE(keeps("MatMul", 0, 2, true));
  EXPECT_FALSE(keeps("MatMul", 0, 2, false));
  EXPECT_TRUE(keeps("Gather", 1, 2, false));
  EXPECT_FALSE(keeps("Gather", 0, 2, true));
  EXPECT_EQ(OnnxOpOf("Gather").weights, OnnxWeightUse::kGather);
  EXPECT_EQ(OnnxOpOf("Conv").ranks, OnnxRanks::kSpatialWithWeight);
}

}  // namespace
}  // namespace dplace::io
