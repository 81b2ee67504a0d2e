#include "dplace/base/interrupt.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace dplace {
namespace {

TEST(InterruptTest, AStopHeardOnItsThreadIsSeenEverywhereUntilTheCheckGoes) {
  EXPECT_FALSE(Interrupted());  // nothing installed
  int asked = 0;
  bool heard = false;
  {
    const InterruptCheck check([&] {
      ++asked;
      return heard;
    });
    EXPECT_FALSE(Interrupted());  // asked at most every 50 ms: not yet
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    EXPECT_FALSE(Interrupted());
    EXPECT_EQ(asked, 1);
    bool other = true;
    heard = true;
    std::thread([&other] { other = Interrupted(); }).join();
    EXPECT_FALSE(other);  // another thread never asks
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    EXPECT_TRUE(Interrupted());
    EXPECT_TRUE(check.fired());
    std::thread([&other] { other = Interrupted(); }).join();
    EXPECT_TRUE(other);  // once heard, seen on every thread
  }
  EXPECT_FALSE(Interrupted());
}

}  // namespace
}  // namespace dplace
