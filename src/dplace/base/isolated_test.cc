#include "dplace/base/isolated.h"

#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <thread>
#include <vector>

namespace dplace {
namespace {

TEST(IsolatedTest, ReturnsTheChildsBytes) {
  auto r = RunIsolated([]() -> StatusOr<std::string> { return std::string("a\0b", 3); }, "work",
                       {.seconds = 10});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, std::string("a\0b", 3));
}

TEST(IsolatedTest, PassesTheChildsErrorOn) {
  auto r = RunIsolated([]() -> StatusOr<std::string> { return InvalidInput("no good"); }, "work",
                       {.seconds = 10});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "no good");
}

TEST(IsolatedTest, ACrashIsAnErrorLine) {
  auto r = RunIsolated(
      []() -> StatusOr<std::string> {
        ::raise(SIGSEGV);
        return std::string();
      },
      "work", {.seconds = 10, .on_crash = "the input is bad"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput);
  EXPECT_NE(r.status().message().find("work crashed ("), std::string::npos);
  EXPECT_NE(r.status().message().find("): the input is bad"), std::string::npos);
}

TEST(IsolatedTest, StopsAChildThatRunsPastItsTime) {
  const auto begin = std::chrono::steady_clock::now();
  auto r = RunIsolated(
      []() -> StatusOr<std::string> {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return std::string();
      },
      "work", {.seconds = 0.3});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "work ran past 0.3 s and was stopped");
  EXPECT_LT(std::chrono::steady_clock::now() - begin, std::chrono::seconds(20));
}

#if !defined(__SANITIZE_ADDRESS__)
TEST(IsolatedTest, CapsTheChildsMemory) {
  auto r = RunIsolated(
      []() -> StatusOr<std::string> {
        std::vector<char> big(size_t{2} << 30, 1);  // 2 GiB against a 256 MiB cap
        return std::string(1, big[12345]);
      },
      "work", {.seconds = 30, .memory_bytes = 256.0 * (1 << 20)});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "work ran out of memory (its budget: 0.25 GiB)");
}
#endif

}  // namespace
}  // namespace dplace
