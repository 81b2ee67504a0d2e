// Views PyTorch can make and reshapes it must copy, checked against what torch 1.13 does
// (x.is_contiguous(), y._base is x, y.stride()) for the same sizes.
#include "dplace/io/onnx/strides.h"

#include <gtest/gtest.h>

namespace dplace::io {
namespace {

TEST(StridesTest, AFreshTensorIsRowMajor) {
  EXPECT_EQ(ContiguousStrides({2, 3, 4}), (Strides{12, 4, 1}));
  EXPECT_EQ(ContiguousStrides({}), Strides{});
}

TEST(StridesTest, AContiguousTensorReshapesAsAView) {
  EXPECT_EQ(ReshapedStrides({2, 3, 4}, {12, 4, 1}, {6, 4}), (Strides{4, 1}));
  EXPECT_EQ(ReshapedStrides({2, 3, 4}, {12, 4, 1}, {2, 1, 12}), (Strides{12, 12, 1}));
}

// HF's repeat_kv: x[:, :, None].expand(b, kv, n_rep, s, d).reshape(b, kv * n_rep, s, d) copies.
TEST(StridesTest, MergingAnExpandedDimensionCopies) {
  const Strides x = ContiguousStrides({2, 2, 1, 8, 16});
  const Strides expanded = ExpandedStrides({2, 2, 1, 8, 16}, x, {2, 2, 3, 8, 16});
  EXPECT_EQ(expanded, (Strides{256, 128, 0, 16, 1}));
  EXPECT_FALSE(ReshapedStrides({2, 2, 3, 8, 16}, expanded, {2, 6, 8, 16}));
  // Splitting a dimension of the expanded tensor is still a view.
  EXPECT_TRUE(ReshapedStrides({2, 2, 3, 8, 16}, expanded, {2, 2, 3, 8, 4, 4}));
}

// y.transpose(1, 2).reshape(b, t, d) after attention copies; a transpose of size-1 dims does not.
TEST(StridesTest, MergingTransposedDimensionsCopies) {
  const auto t = PermutedStrides(ContiguousStrides({2, 4, 8, 16}), {0, 2, 1, 3});
  ASSERT_TRUE(t);
  EXPECT_EQ(*t, (Strides{512, 16, 128, 1}));
  EXPECT_FALSE(ReshapedStrides({2, 8, 4, 16}, *t, {2, 8, 64}));
  const auto ones = PermutedStrides(ContiguousStrides({2, 1, 8}), {1, 0, 2});
  ASSERT_TRUE(ones);
  EXPECT_TRUE(ReshapedStrides({1, 2, 8}, *ones, {16}));
}

TEST(StridesTest, AnEmptyPermReversesAndABadOneIsRefused) {
  EXPECT_EQ(PermutedStrides({12, 4, 1}, {}), (Strides{1, 4, 12}));
  EXPECT_FALSE(PermutedStrides({12, 4, 1}, {0, 0, 1}));
  EXPECT_FALSE(PermutedStrides({12, 4, 1}, {0, 1}));
}

TEST(StridesTest, ExpandAddsLeadingDimensionsWithStrideZero) {
  EXPECT_EQ(ExpandedStrides({3, 1}, {1, 1}, {2, 3, 4}), (Strides{0, 1, 0}));
}

// x = randn(2, 8, 4, 16).transpose(1, 2): x.tanh(), x + bias, x + y keep x's layout (so merging
// the heads back after them is a view); y + x takes y's; an expanded operand tells nothing.
TEST(StridesTest, APointwiseResultIsLaidOutAsItsOperands) {
  const std::vector<int64_t> dims{2, 4, 8, 16};
  const StridedOperand x{dims, {512, 16, 64, 1}};
  const StridedOperand y{dims, ContiguousStrides(dims)};
  const StridedOperand bias{{16}, {1}};
  EXPECT_EQ(PointwiseStrides(dims, {x}), (Strides{512, 16, 64, 1}));
  EXPECT_EQ(PointwiseStrides(dims, {x, bias}), (Strides{512, 16, 64, 1}));
  EXPECT_EQ(PointwiseStrides(dims, {x, y}), (Strides{512, 16, 64, 1}));
  EXPECT_EQ(PointwiseStrides(dims, {y, x}), (Strides{512, 128, 16, 1}));
  EXPECT_EQ(PointwiseStrides({2, 3, 8}, {{{2, 3, 8}, {8, 0, 1}}}), (Strides{24, 8, 1}));
  EXPECT_TRUE(ReshapedStrides({2, 8, 4, 16},
                              PermutedStrides(PointwiseStrides(dims, {x}), {0, 2, 1, 3}).value(),
                              {2, 8, 64}));
}

}  // namespace
}  // namespace dplace::io
