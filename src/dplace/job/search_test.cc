#include "dplace/job/search.h"

#include <gtest/gtest.h>

#include <functional>
#include <limits>

namespace dplace::job {
namespace {

// A small decoder on two nodes of two GPUs each, memory tight enough that some plans do not fit.
struct Instance {
  Job job;
  hw::Machine machine;
};

Instance Small(int64_t layers, double memory_bytes, int64_t batch) {
  Instance in;
  in.job.model = {.name = "tiny",
                  .layers = layers,
                  .hidden = 1024,
                  .heads = 8,
                  .kv_heads = 4,
                  .head_dim = 128,
                  .ffn = 2816,
                  .vocab = 32000,
                  .positions = 2048,
                  .gated_mlp = true,
                  .tied_embeddings = false,
                  .layernorm_bias = false};
  in.job.seq_len = 2048;
  in.job.global_batch = batch;
  in.machine.name = "test:2";
  in.machine.gpu = {.name = "gpu",
                    .kind = "gpu",
                    .memory_bytes = memory_bytes,
                    .peak_flops = 1e13,
                    .peak_flops_half = 1e14,
                    .memory_bandwidth_bytes_per_s = 1e12};
  in.machine.levels = {
      {.name = "nvlink", .size = 2, .bandwidth_bytes_per_s = 1e11, .latency_s = 3e-6},
      {.name = "ib", .size = 2, .bandwidth_bytes_per_s = 1e10, .latency_s = 5e-6}};
  return in;
}

// Every plan of the space: each configuration with every split into contiguous stages (v = 1) or
// the even split (v > 1), every recomputation mode per stage (per rank when interleaved), judged.
double BruteForce(const Job& job, const hw::Machine& m, const Fixed& fixed, int64_t* plans) {
  double best = std::numeric_limits<double>::infinity();
  const int L = static_cast<int>(job.model.layers);
  constexpr Recompute kAll[] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  for (const Config& c : EnumerateConfigs(job, m, fixed)) {
    ParallelPlan plan = PlanOf(c, {});
    const int S = c.pp * c.virtual_stages;
    std::vector<int> sizes;
    std::function<void(int, int)> splits = [&](int stage, int used) {
      if (stage == S) {
        if (used != L) return;
        // Recomputation: a mode per stage (v = 1) or per rank.
        const int choices = c.virtual_stages == 1 ? S : c.pp;
        int combos = 1;
        for (int i = 0; i < choices; ++i) combos *= 3;
        for (int code = 0; code < combos; ++code) {
          plan.stages.clear();
          int at = 0, x = code;
          std::vector<Recompute> mode(static_cast<size_t>(choices));
          for (int i = 0; i < choices; ++i, x /= 3) mode[static_cast<size_t>(i)] = kAll[x % 3];
          for (int s = 0; s < S; ++s) {
            const Recompute r = mode[static_cast<size_t>(c.virtual_stages == 1 ? s : s % c.pp)];
            if (fixed.recompute && r != *fixed.recompute) goto next;
            plan.stages.push_back({.first_layer = at,
                                   .layers = sizes[static_cast<size_t>(s)],
                                   .tp = c.tp,
                                   .dp = c.dp,
                                   .recompute = r});
            at += sizes[static_cast<size_t>(s)];
          }
          {
            const JudgedPlan j = Judge(job, m, plan);
            ++*plans;
            if (j.fits) best = std::min(best, j.iteration_s);
          }
        next:;
        }
        return;
      }
      const int left = L - used, stages_left = S - stage;
      if (c.virtual_stages > 1) {  // the even split only
        sizes.push_back(L / S);
        splits(stage + 1, used + L / S);
        sizes.pop_back();
        return;
      }
      for (int n = 1; n <= left - (stages_left - 1); ++n) {
        sizes.push_back(n);
        splits(stage + 1, used + n);
        sizes.pop_back();
      }
    };
    splits(0, 0);
  }
  return best;
}

TEST(SearchTest, TheSearchFindsTheBruteForceOptimumOnSmallInstances) {
  struct Case {
    int64_t layers;
    double memory;
    int64_t batch;
  };
  // Memory from loose to tight: what fits moves from data parallelism to pipelines recomputing.
  const Case cases[] = {{4, 40e9, 8}, {4, 6e9, 8}, {6, 3e9, 8}, {6, 1.6e9, 4}, {8, 1.2e9, 8}};
  for (const Case& c : cases) {
    const Instance in = Small(c.layers, c.memory, c.batch);
    int64_t plans = 0;
    const double brute = BruteForce(in.job, in.machine, {}, &plans);
    const SearchResult found = Search(in.job, in.machine, {});
    ASSERT_TRUE(found.best.has_value()) << "layers " << c.layers << " memory " << c.memory;
    EXPECT_NEAR(found.best->iteration_s / brute, 1.0, 1e-12)
        << "layers " << c.layers << " memory " << c.memory << ": " << plans << " plans";
    EXPECT_TRUE(found.best->fits);
    EXPECT_LT(found.judged, plans);  // the DP and the bound judge fewer plans than brute force
  }
}

TEST(SearchTest, FixingAChoiceSearchesOnlyTheRest) {
  const Instance in = Small(4, 6e9, 8);
  Fixed fixed;
  fixed.tp = 2;
  fixed.pp = 2;
  const SearchResult r = Search(in.job, in.machine, fixed);
  ASSERT_TRUE(r.best.has_value());
  EXPECT_EQ(r.best->plan.tp, 2);
  EXPECT_EQ(r.best->plan.pp, 2);
  EXPECT_EQ(r.best->plan.dp, 1);
  int64_t plans = 0;
  EXPECT_NEAR(r.best->iteration_s / BruteForce(in.job, in.machine, fixed, &plans), 1.0, 1e-12);
}

TEST(SearchTest, NothingFitsGivesThePlanNeedingLeastMemory) {
  const Instance in = Small(4, 1e8, 8);
  const SearchResult r = Search(in.job, in.machine, {});
  EXPECT_FALSE(r.best.has_value());
  ASSERT_TRUE(r.least_memory.has_value());
  EXPECT_FALSE(r.least_memory->fits);
  EXPECT_GT(r.least_memory->peak_memory(), 1e8);
}

TEST(SearchTest, TensorParallelismStaysInsideANodeUnlessAllowed) {
  Instance in = Small(4, 40e9, 8);
  for (const Config& c : EnumerateConfigs(in.job, in.machine, {})) EXPECT_LE(c.tp, 2);
  in.job.tp_across_nodes = true;
  bool wide = false;
  for (const Config& c : EnumerateConfigs(in.job, in.machine, {})) wide |= c.tp == 4;
  EXPECT_TRUE(wide);
}

TEST(SearchTest, EveryFamilyBestIsItsFamilysAndTheBestIsTheFastest) {
  const Instance in = Small(4, 40e9, 8);
  const SearchResult r = Search(in.job, in.machine, {});
  ASSERT_TRUE(r.best.has_value());
  for (const JudgedPlan& j : r.family_best) {
    EXPECT_EQ(FamilyOf({.tp = j.plan.tp, .pp = j.plan.pp, .zero = j.plan.zero}), j.family);
    EXPECT_GE(j.iteration_s, r.best->iteration_s);
  }
  EXPECT_GE(r.family_best.size(), 4u);
}

TEST(SearchTest, MfuIsModelFlopsOverPeakAndTime) {
  const Instance in = Small(4, 40e9, 8);
  const SearchResult r = Search(in.job, in.machine, {});
  ASSERT_TRUE(r.best.has_value());
  const double flops = ModelFlops(in.job.model, 2048, 8.0 * 2048);
  EXPECT_NEAR(r.best->mfu, flops / (r.best->iteration_s * 4 * 1e14), 1e-12);
  EXPECT_GE(r.best->hfu, r.best->mfu);
  EXPECT_LT(r.best->mfu, 1.0);
}

}  // namespace
}  // namespace dplace::job
