#include "dplace/job/piper.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace dplace::job {
namespace {

// A chain of layers, each with a fast option and a lean one (recomputing) at t = 1 and 2.
PiperInstance Chain(int layers, int devices, double memory) {
  PiperInstance in;
  in.max_devices = devices;
  in.memory_bytes = memory;
  in.bandwidth_bytes_per_s = 1e9;
  in.microbatches = 8;
  in.layers.resize(static_cast<size_t>(layers));
  for (int v = 0; v < layers; ++v) {
    PiperLayer& l = in.layers[static_cast<size_t>(v)];
    l.name = "l" + std::to_string(v);
    if (v > 0) {
      l.preds = {v - 1};
      l.pred_bytes = {1e6 * (v % 3 + 1)};
    }
    if (v + 1 < layers) {
      l.succs = {v + 1};
      l.succ_bytes = {1e6 * ((v + 1) % 3 + 1)};
    }
    l.options.resize(3);
    for (int t : {1, 2}) {
      const double work = (1.0 + 0.3 * (v % 2)) / t * (t == 2 ? 1.1 : 1.0);
      PiperOption fast{.id = "vanilla",
                       .time_per_sample_s = work,
                       .parameter_bytes = 4e6 / t,
                       .memory_a = 3e6 / t,
                       .memory_b = 2e6 / t};
      PiperOption lean{.id = "activation recomp",
                       .time_per_sample_s = work * 1.3,
                       .parameter_bytes = 4e6 / t,
                       .memory_a = 0.5e6 / t,
                       .memory_b = 2.2e6 / t};
      for (PiperOption* o : {&fast, &lean}) {
        o->sync_fw.assign(l.preds.size(), t == 2 ? 1e5 : 0);
        o->sync_bw.assign(l.succs.size(), t == 2 ? 1e5 : 0);
      }
      l.options[static_cast<size_t>(t)] = {fast, lean};
    }
  }
  return in;
}

// Every split of the chain into contiguous stages, every (t, d) per stage and every option per
// layer, judged by Piper's model: the exact optimum of Piper's space.
double BruteForce(const PiperInstance& in) {
  const int n = static_cast<int>(in.layers.size());
  double best = std::numeric_limits<double>::infinity();
  std::vector<PiperStage> stages;
  std::function<void(int, int, int)> go = [&](int from, int devices, int dp_sum) {
    if (from == n) {
      // Options: every combination.
      std::vector<PiperStage*> all;
      int slots = 0;
      for (PiperStage& s : stages) slots += static_cast<int>(s.layers.size());
      for (int code = 0; code < (1 << slots); ++code) {
        int bit = 0;
        for (PiperStage& s : stages) {
          for (int& o : s.option) o = (code >> bit++) & 1;
        }
        best = std::min(best, PiperTimePerSample(in, stages));
      }
      return;
    }
    for (int to = from + 1; to <= n; ++to) {
      for (int t : {1, 2}) {
        for (int d = 1; d <= in.max_devices; ++d) {
          if (in.microbatches % d != 0 || devices + t * d > in.max_devices ||
              dp_sum + d > std::min(in.microbatches, in.max_devices)) {
            continue;
          }
          PiperStage s{.t = t, .d = d};
          for (int v = from; v < to; ++v) s.layers.push_back(v);
          s.option.assign(s.layers.size(), 0);
          stages.push_back(s);
          go(to, devices + t * d, dp_sum + d);
          stages.pop_back();
        }
      }
    }
  };
  go(0, 0, 0);
  return best;
}

TEST(PiperTest, TheDpFindsTheBruteForceOptimumWhereMemoryDoesNotBind) {
  for (int devices : {1, 2, 4}) {
    const PiperInstance in = Chain(5, devices, 1e12);
    auto plan = PlanPiper(in);
    ASSERT_TRUE(plan.ok()) << plan.status().message();
    EXPECT_NEAR(plan->time_per_sample_s, BruteForce(in), 1e-12) << devices << " devices";
    EXPECT_LE(plan->devices, devices);
    EXPECT_NEAR(PiperTimePerSample(in, plan->stages), plan->time_per_sample_s, 1e-12);
  }
}

TEST(PiperTest, UnderTightMemoryTheKnapsackRecomputesAndThePlanFits) {
  const PiperInstance in = Chain(5, 2, 9e6);
  auto plan = PlanPiper(in);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  // Piper's options per stage come from its knapsack heuristic: never better than every choice.
  EXPECT_GE(plan->time_per_sample_s, BruteForce(in) - 1e-12);
  EXPECT_NEAR(PiperTimePerSample(in, plan->stages), plan->time_per_sample_s, 1e-12);
  int recomputing = 0;
  for (const PiperStage& s : plan->stages) {
    for (int o : s.option) recomputing += o;
  }
  EXPECT_GT(recomputing, 0);
}

TEST(PiperTest, NothingFitsIsAnError) { EXPECT_FALSE(PlanPiper(Chain(3, 2, 1e6)).ok()); }

TEST(PiperTest, ATableTooLargeForMemoryIsRefusedNotAllocated) {
  PiperInstance in = Chain(40, 4096, 1e12);
  in.microbatches = 4096;
  auto plan = PlanPiper(in);
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find("needs more than 2 GiB"), std::string::npos);
}

}  // namespace
}  // namespace dplace::job
