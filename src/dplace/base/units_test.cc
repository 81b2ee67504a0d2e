#include "dplace/base/units.h"

#include <gtest/gtest.h>

namespace dplace {
namespace {

TEST(UnitsTest, SizesUseDecimalAndBinaryPrefixes) {
  EXPECT_DOUBLE_EQ(*ParseBytes("16GiB"), 16.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(*ParseBytes("16GB"), 16e9);
  EXPECT_DOUBLE_EQ(*ParseBytes("512"), 512);
  EXPECT_DOUBLE_EQ(*ParseBytes("1.5KB"), 1500);
  EXPECT_DOUBLE_EQ(*ParseBytes("2 MiB"), 2.0 * 1024 * 1024);
}

TEST(UnitsTest, RatesAndDurations) {
  EXPECT_DOUBLE_EQ(*ParseBytesPerSecond("25GB/s"), 25e9);
  EXPECT_DOUBLE_EQ(*ParseBytesPerSecond("100Gb/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(*ParseSeconds("10us"), 10e-6);
  EXPECT_DOUBLE_EQ(*ParseSeconds("1ms"), 1e-3);
  EXPECT_DOUBLE_EQ(*ParseSeconds("5ns"), 5e-9);
  EXPECT_DOUBLE_EQ(*ParseSeconds("2"), 2);
}

TEST(UnitsTest, MalformedQuantitiesAreErrors) {
  EXPECT_FALSE(ParseBytes("GiB").ok());
  EXPECT_FALSE(ParseBytes("16XB").ok());
  EXPECT_FALSE(ParseBytes("-1GB").ok());
  EXPECT_FALSE(ParseBytesPerSecond("25GB").ok());
  EXPECT_FALSE(ParseSeconds("10 parsecs").ok());
  EXPECT_EQ(ParseSeconds("abc").status().code(), StatusCode::kInvalidInput);
}

TEST(UnitsTest, Formatting) {
  EXPECT_EQ(FormatBytes(1536), "1.50 KiB");
  EXPECT_EQ(FormatSeconds(0.0123), "12.3 ms");
}

}  // namespace
}  // namespace dplace
