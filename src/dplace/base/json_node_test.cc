#include "dplace/base/json_node.h"

#include <gtest/gtest.h>

namespace dplace {
namespace {

TEST(JsonNodeTest, ParseErrorsGiveLineAndColumn) {
  auto r = ParseJson("{\n  \"a\": 1,\n  \"b\": ]\n}");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("line 3, column 8"), std::string::npos)
      << r.status().message();
}

TEST(JsonNodeTest, TruncatedInputSaysSo) {
  auto r = ParseJson("{\"a\": [1, 2");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("truncated"), std::string::npos) << r.status().message();
}

TEST(JsonNodeTest, ErrorsNameThePath) {
  Json j = *ParseJson(R"({"ops": [{"t": 1}, {"t": -2}]})");
  JsonNode root(j, "(top level)");
  auto ops = root.Field("ops")->Elements();
  ASSERT_TRUE(ops.ok());
  auto bad = (*ops)[1].Field("t")->NonNegativeNumber();
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "ops[1].t: must not be negative (got -2)");
  auto missing = (*ops)[0].Field("name");
  EXPECT_EQ(missing.status().message(), "ops[0]: missing field 'name'");
}

TEST(JsonNodeTest, QuantitiesAcceptNumbersAndStrings) {
  Json j = *ParseJson(R"({"a": "16GiB", "b": 1000, "c": "10us", "d": "fast"})");
  JsonNode root(j, "(top level)");
  EXPECT_DOUBLE_EQ(*root.Field("a")->Bytes(), 16.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(*root.Field("b")->Bytes(), 1000);
  EXPECT_DOUBLE_EQ(*root.Field("c")->Seconds(), 1e-5);
  EXPECT_FALSE(root.Field("d")->BytesPerSecond().ok());
}

}  // namespace
}  // namespace dplace
