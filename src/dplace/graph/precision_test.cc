#include "dplace/graph/precision.h"

#include <gtest/gtest.h>

#include "dplace/graph/graph_builder.h"
#include "dplace/graph/training.h"

namespace dplace::graph {
namespace {

// m (400 B of fp32 weights, 80 B out) -> r (a view of m's output).
Graph Forward() {
  GraphBuilder b("fwd");
  const OpId m =
      b.AddOp({.name = "m", .type = "MatMul", .bytes_accessed = 100, .param_bytes = 400}, {{80}});
  const OpId r =
      b.AddOp({.name = "r", .type = "Reshape"}, {{.bytes = 80, .view = true, .view_of_op = m}});
  b.AddEdge(m, 0, r);
  return std::move(b.Build()).value();
}

TEST(PrecisionTest, HalfHalvesEverythingAmpKeepsFp32MasterWeights) {
  auto train = ExpandTraining(Forward());
  ASSERT_TRUE(train.ok());
  const OpId m = *train->FindOp("m"), grad = *train->FindOp("m/grad"),
             up = *train->FindOp("m/update");
  // Adam: weights 400, gradient 400, two moments 800.
  EXPECT_DOUBLE_EQ(train->op(up).param_bytes, 800);
  const Graph half = ApplyPrecision(*train, Precision::kFp32, Precision::kBf16);
  EXPECT_DOUBLE_EQ(half.op(m).param_bytes, 200);
  EXPECT_DOUBLE_EQ(half.op(grad).param_bytes, 200);
  EXPECT_DOUBLE_EQ(half.op(up).param_bytes, 400);
  EXPECT_DOUBLE_EQ(half.tensor(half.FirstOutput(m)).bytes, 40);
  EXPECT_DOUBLE_EQ(half.op(m).bytes_accessed, 50);
  EXPECT_TRUE(half.tensor(half.FirstOutput(*half.FindOp("r"))).view);
  // AMP: fp32 master weights plus their half copies (600), fp32 gradients and moments.
  const Graph amp = ApplyPrecision(*train, Precision::kFp32, Precision::kAmp);
  EXPECT_DOUBLE_EQ(amp.op(m).param_bytes, 600);
  EXPECT_DOUBLE_EQ(amp.op(grad).param_bytes, 400);
  EXPECT_DOUBLE_EQ(amp.op(up).param_bytes, 800);
  EXPECT_DOUBLE_EQ(amp.tensor(amp.FirstOutput(m)).bytes, 40);
  // Back from fp16: the file's own precision is the starting point.
  const Graph back = ApplyPrecision(half, Precision::kFp16, Precision::kFp32);
  EXPECT_DOUBLE_EQ(back.op(m).param_bytes, 400);
}

TEST(PrecisionTest, Names) {
  EXPECT_EQ(ParsePrecision("amp"), Precision::kAmp);
  EXPECT_EQ(PrecisionName(Precision::kBf16), "bf16");
  EXPECT_FALSE(ParsePrecision("fp8").has_value());
  EXPECT_FALSE(UsesHalfPeak(Precision::kFp32));
  EXPECT_TRUE(UsesHalfPeak(Precision::kAmp));
}

}  // namespace
}  // namespace dplace::graph
