// The measured evaluator (measured_evaluator.h): the measure's value, the simulation's
// feasibility, one evaluation counted per measurement, errors kept.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "dplace/sim/measured_evaluator.h"
#include "dplace/sim/test_problems.h"

namespace dplace::sim {
namespace {

using testing::Make;
using testing::ThreeDevices;
using testing::TimedOp;

// a (1 s, 2 bytes out) -> b (1 s), on ThreeDevices with `memory` bytes a GPU.
std::shared_ptr<const Problem> TwoOps(double memory = hw::kUnlimited) {
  graph::GraphBuilder builder("two");
  const auto a = builder.AddOp(TimedOp("a", 1), {{2, -1}});
  const auto b = builder.AddOp(TimedOp("b", 1));
  builder.AddEdge(a, 0, b);
  return std::make_shared<const Problem>(Make(builder, ThreeDevices(memory)));
}

// A fake measure: 1 s plus 1 s per op off d1, counting its calls.
std::shared_ptr<const Measurer> OffD1(std::atomic<int>* calls) {
  return std::make_shared<const Measurer>([calls](const Placement& p) -> StatusOr<double> {
    ++*calls;
    double s = 1;
    for (DeviceId d : p) s += d != DeviceId(1) ? 1 : 0;
    return s;
  });
}

TEST(MeasuredEvaluatorTest, JudgesByTheMeasureAndCountsEachMeasurement) {
  std::atomic<int> calls = 0;
  MeasuredEvaluator e(TwoOps(), OffD1(&calls));
  EXPECT_EQ(e.Evaluate(OnDevices({0, 0})).value, 3);
  EXPECT_EQ(e.Evaluate(OnDevices({1, 1})).value, 1);
  ASSERT_NE(e.Incremental(), nullptr);
  e.Incremental()->SetBase(OnDevices({1, 1}));
  EXPECT_EQ(e.Incremental()->EvaluateNear(OnDevices({1, 0}), /*give_up_above=*/0.5).value, 2);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(e.evaluations(), 3);
  // The critical path is the simulation's: no measurement, one evaluation.
  EXPECT_EQ(e.Incremental()->CriticalPath(OnDevices({0, 0})).size(), 2U);
  EXPECT_EQ(calls, 3);
  EXPECT_EQ(e.evaluations(), 4);
  // A fork measures through the same measurer and counts apart.
  auto fork = e.Fork();
  EXPECT_EQ(fork->Evaluate(OnDevices({0, 1})).value, 2);
  EXPECT_EQ(fork->evaluations(), 1);
  EXPECT_EQ(calls, 4);
}

TEST(MeasuredEvaluatorTest, APlacementThatDoesNotFitIsNotRun) {
  // 1.5 bytes a GPU: a's 2-byte output does not fit on one; the CPU has room.
  std::atomic<int> calls = 0;
  MeasuredEvaluator e(TwoOps(1.5), OffD1(&calls));
  const Evaluation over = e.Evaluate(OnDevices({0, 2}));
  EXPECT_FALSE(over.feasible);
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(e.evaluations(), 1);
  EXPECT_TRUE(e.Evaluate(OnDevices({2, 2})).feasible);
  EXPECT_EQ(calls, 1);
}

TEST(MeasuredEvaluatorTest, AFailedOrSenselessMeasurementIsInfeasibleAndKept) {
  int call = 0;
  auto measurer = std::make_shared<const Measurer>([&call](const Placement&) -> StatusOr<double> {
    if (++call == 1) return -1.0;
    return InvalidInput("measure: out of memory on cuda:1");
  });
  MeasuredEvaluator e(TwoOps(), measurer);
  const Evaluation first = e.Evaluate(OnDevices({0, 0}));
  EXPECT_FALSE(first.feasible);
  EXPECT_NE(first.reason.find("returned -1"), std::string::npos) << first.reason;
  const Evaluation second = e.Evaluate(OnDevices({0, 0}));
  EXPECT_NE(second.reason.find("out of memory"), std::string::npos) << second.reason;
  // The first error is the one kept.
  EXPECT_NE(std::string(measurer->first_error().message()).find("returned -1"), std::string::npos);
}

TEST(MeasuredEvaluatorTest, MeasurementsFromTwoThreadsRunOneAtATime) {
  std::atomic<int> inside = 0, most = 0;
  auto measurer = std::make_shared<const Measurer>([&](const Placement&) -> StatusOr<double> {
    const int now = ++inside;
    most = std::max(most.load(), now);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
    --inside;
    return 1.0;
  });
  MeasuredEvaluator e(TwoOps(), measurer);
  auto fork = e.Fork();
  std::thread other([&fork] {
    for (int i = 0; i < 20; ++i) fork->Evaluate(OnDevices({0, 1}));
  });
  for (int i = 0; i < 20; ++i) e.Evaluate(OnDevices({1, 0}));
  other.join();
  EXPECT_EQ(most, 1);
}

}  // namespace
}  // namespace dplace::sim
