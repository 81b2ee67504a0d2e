#include "dplace/graph/families.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include "dplace/graph/training.h"

namespace dplace::graph {
namespace {

// A fingerprint of everything a placer reads of a graph.
std::string Fingerprint(const Graph& g) {
  std::string s = g.name();
  for (OpId op : g.op_ids()) {
    const Op& o = g.op(op);
    s += o.name + o.type + std::to_string(o.flops) + std::to_string(o.param_bytes) +
         std::to_string(o.bytes_accessed);
    for (OpId p : g.Predecessors(op)) s += "<" + std::to_string(p.value());
  }
  for (const Tensor& t : g.tensors()) s += std::to_string(t.bytes);
  return s;
}

class FamilyTest : public testing::TestWithParam<std::string_view> {};

TEST_P(FamilyTest, SizedAsDocumentedDeterministicAndDiverse) {
  const std::string_view family = GetParam();
  std::set<int> sizes;
  for (int i = 0; i < 12; ++i) {
    auto g = GenerateGraph(family, 7, i);
    ASSERT_TRUE(g.ok()) << g.status().message();
    EXPECT_GE(g->num_ops(), 100) << g->name();
    EXPECT_LE(g->num_ops(), 3000) << g->name();
    EXPECT_GT(g->TotalFlops(), 0);
    sizes.insert(g->num_ops());
    auto again = GenerateGraph(family, 7, i);
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(Fingerprint(*g), Fingerprint(*again)) << "not deterministic: " << g->name();
    // A training step of it builds too.
    auto training = ExpandTraining(*g);
    ASSERT_TRUE(training.ok()) << training.status().message();
    EXPECT_GT(training->num_ops(), g->num_ops());
  }
  EXPECT_GE(sizes.size(), 6u) << "graphs of one family should differ in size";
  auto other_seed = GenerateGraph(family, 8, 0);
  ASSERT_TRUE(other_seed.ok());
  EXPECT_NE(Fingerprint(*other_seed), Fingerprint(*GenerateGraph(family, 7, 0)));
}

INSTANTIATE_TEST_SUITE_P(All, FamilyTest, testing::ValuesIn(FamilyNames()),
                         [](const auto& p) { return std::string(p.param); });

TEST(FamiliesTest, OverridesAreReadAndChecked) {
  auto small = GenerateGraph("layered", 1, 0, {{"ops", 150}, {"width", 10}});
  ASSERT_TRUE(small.ok());
  EXPECT_EQ(small->num_ops(), 150);
  auto nmt = GenerateGraph("nmt", 1, 0, {{"layers", 1}, {"source_steps", 5}, {"target_steps", 5}});
  ASSERT_TRUE(nmt.ok());
  // Per step 1 embedding + 9 LSTM ops (+ 8 attention and output ops when decoding), 6 variables,
  // the initial state and the encoder's memory.
  EXPECT_EQ(nmt->num_ops(), 5 * 10 + 5 * 18 + 6 + 1 + 1);

  auto unknown = GenerateGraph("nmt", 1, 0, {{"cells", 2}});
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("no parameter 'cells'"), std::string::npos);
  auto out_of_range = GenerateGraph("enas_cnn", 1, 0, {{"cells", 0}});
  ASSERT_FALSE(out_of_range.ok());
  EXPECT_NE(out_of_range.status().message().find("'cells' must be an integer in [1, 12], not 0"),
            std::string::npos)
      << out_of_range.status().message();
  // Values that would size the graph without bound are refused before they size anything.
  for (double bad : {std::nan(""), std::numeric_limits<double>::infinity(), -1.0, 1e308, 2.5}) {
    auto refused = GenerateGraph("enas_rnn", 1, 0, {{"nodes", bad}});
    ASSERT_FALSE(refused.ok()) << bad;
    EXPECT_NE(refused.status().message().find("'nodes' must be an integer in [2, 24]"),
              std::string::npos)
        << refused.status().message();
    EXPECT_FALSE(GenerateGraph("layered", 1, 0, {{"fan_in", bad}}).ok()) << bad;
  }
  EXPECT_FALSE(GenerateGraph("layered", 1, 0, {{"ops", 1e6}}).ok());
  auto no_family = GenerateGraph("resnet", 1, 0);
  ASSERT_FALSE(no_family.ok());
  EXPECT_NE(no_family.status().message().find("unknown graph family 'resnet'"), std::string::npos);
  for (std::string_view f : FamilyNames()) EXPECT_FALSE(FamilyKeys(f).empty()) << f;
}

}  // namespace
}  // namespace dplace::graph
