#include "dplace/run/plan_job.h"

#include <gtest/gtest.h>

#include "dplace/base/json_node.h"
#include "dplace/io/job_export.h"

namespace dplace::run {
namespace {

const std::string kConfigs = DPLACE_SOURCE_DIR "/testdata/configs/";
const std::string kLlama8b = DPLACE_SOURCE_DIR "/models/configs/llama3-8b.json";

PlanRequest Llama(std::string fix = "") {
  return {.model = kLlama8b,
          .cluster = "dgx-h100:2",
          .global_batch = 256,
          .seq_len = 4096,
          .fix = std::move(fix)};
}

std::string ErrorOf(const PlanRequest& request) {
  auto r = PlanJob(request);
  EXPECT_FALSE(r.ok());
  if (r.ok()) return "";
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidInput) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos);
  return r.status().message();
}

TEST(PlanJobTest, FixParsesEveryKey) {
  auto f = ParseFix(
      "tp=8,pp=8,dp=24,cp=1,zero=1,sp=on,mbs=1,vp=2,schedule=interleaved,"
      "recompute=full");
  ASSERT_TRUE(f.ok()) << f.status().message();
  EXPECT_EQ(f->tp, 8);
  EXPECT_EQ(f->dp, 24);
  EXPECT_EQ(f->virtual_stages, 2);
  EXPECT_EQ(f->sequence_parallel, true);
  EXPECT_EQ(f->schedule, job::Schedule::kInterleaved);
  EXPECT_EQ(f->recompute, job::Recompute::kFull);
  EXPECT_TRUE(ParseFix("").ok());
}

TEST(PlanJobTest, BadFixesGetOneLineEach) {
  EXPECT_NE(ParseFix("tpp=2").status().message().find("did you mean 'tp'"), std::string::npos);
  EXPECT_FALSE(ParseFix("tp=0").ok());
  EXPECT_FALSE(ParseFix("tp=x").ok());
  EXPECT_FALSE(ParseFix("zero=4").ok());
  EXPECT_FALSE(ParseFix("sp=yes").ok());
  EXPECT_FALSE(ParseFix("tp=2,tp=4").ok());
  EXPECT_FALSE(ParseFix("schedule=1F1B").ok());
  EXPECT_FALSE(ParseFix("tp").ok());
}

TEST(PlanJobTest, DegreesThatContradictTheMachineOrModelAreRefused) {
  EXPECT_NE(ErrorOf(Llama("tp=8,pp=2,dp=2")).find("not the 16 GPUs"), std::string::npos);
  EXPECT_NE(ErrorOf(Llama("tp=3")).find("does not divide the model's 32 attention heads"),
            std::string::npos);
  EXPECT_NE(ErrorOf(Llama("mbs=3")).find("does not divide --global-batch 256"), std::string::npos);
  PlanRequest wide = Llama("tp=16");
  wide.model = kConfigs + "pythia-2.8b.json";  // 32 heads, 32 key-value heads
  EXPECT_NE(ErrorOf(wide).find("spans nodes"), std::string::npos);
  EXPECT_NE(ErrorOf(Llama("pp=2,vp=3")).find("equal virtual stages"), std::string::npos);
  EXPECT_NE(ErrorOf(Llama("sp=on,tp=1")).find("needs tensor parallelism"), std::string::npos);
  EXPECT_NE(ErrorOf(Llama("pp=64")).find("more stages than"), std::string::npos);
  PlanRequest r = Llama();
  r.global_batch = 0;
  EXPECT_NE(ErrorOf(r).find("--global-batch"), std::string::npos);
  r = Llama();
  r.dtype = "fp4";
  EXPECT_NE(ErrorOf(r).find("--dtype"), std::string::npos);
  r = Llama();
  r.cluster = "dgx-a100:2";
  r.dtype = "fp8";
  EXPECT_NE(ErrorOf(r).find("no FP8 peak"), std::string::npos);
  r = Llama();
  r.cluster = "dgx-h100:0";
  EXPECT_NE(ErrorOf(r).find("number of nodes"), std::string::npos);
}

TEST(PlanJobTest, BadConfigsAreRefusedNamingTheField) {
  PlanRequest r = Llama();
  r.model = kConfigs + "mixtral-8x7b.json";
  EXPECT_NE(ErrorOf(r).find("mixture-of-experts"), std::string::npos);
  r.model = DPLACE_SOURCE_DIR "/clusters/a100x8.json";
  EXPECT_NE(ErrorOf(r).find("not a model config"), std::string::npos);
  r.model = kConfigs + "missing.json";
  EXPECT_FALSE(ErrorOf(r).empty());
}

TEST(PlanJobTest, AModelThatFitsNoPlanSaysTheLeastMemoryItNeeds) {
  PlanRequest r = Llama();
  r.model = kConfigs + "gpt-1t.json";
  r.cluster = "dgx-h100";
  r.seq_len = 2048;
  r.global_batch = 64;
  const std::string message = ErrorOf(r);
  EXPECT_NE(message.find("does not fit"), std::string::npos) << message;
  EXPECT_NE(message.find("least memory a GPU needs is"), std::string::npos) << message;
}

TEST(PlanJobTest, LlamaOnTwoNodesGetsAFittingPlanAndEveryFrameworksSettings) {
  PlanRequest request = Llama();
  request.exports = {"megatron", "torchtitan", "deepspeed"};
  auto r = PlanJob(request);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->chosen.has_value());
  EXPECT_TRUE(r->chosen->fits);
  EXPECT_EQ(r->chosen->plan.gpus(), 16);
  EXPECT_LE(r->chosen->plan.tp, 8);
  EXPECT_GT(r->chosen->mfu, 0.2);
  EXPECT_LT(r->chosen->mfu, 1.0);
  EXPECT_FALSE(r->why.empty());
  ASSERT_EQ(r->exports.size(), 3u);
  for (const FrameworkPlan& f : r->exports) {
    ASSERT_TRUE(f.plan.has_value()) << f.framework << ": " << f.refusal;
    EXPECT_GE(f.plan->iteration_s, r->chosen->iteration_s * (1 - 1e-12)) << f.framework;
    EXPECT_FALSE(f.content.empty());
    const io::JobExportRow* row = io::FindJobExport(f.framework);
    EXPECT_TRUE(io::JobExportRefusal(*row, r->job, f.plan->plan).empty()) << f.framework;
  }
  auto speed = ParseJson(r->exports[2].content);
  ASSERT_TRUE(speed.ok());
  const job::ParallelPlan& p = r->exports[2].plan->plan;
  EXPECT_EQ((*speed)["train_batch_size"], 256);
  EXPECT_EQ((*speed)["train_micro_batch_size_per_gpu"].get<int>() *
                (*speed)["gradient_accumulation_steps"].get<int>() * p.dp,
            256);
  EXPECT_NE(r->exports[0].content.find("--tensor-model-parallel-size"), std::string::npos);
}

TEST(PlanJobTest, StagesOfTheirOwnTensorParallelDegreeAreExportedAsTheBestPlanEachFrameworkRuns) {
  // Without ZeRO on two stages under 1F1B, the first stage (embedding, and the most micro-batches
  // in flight) is faster in TP 2 than recomputing, the second in TP 1. (Under ZB-H2, holding its
  // weight gradients' inputs longer on both, TP 2 throughout wins.)
  PlanRequest request = Llama("zero=0,pp=2,schedule=1f1b");
  request.exports = {"megatron", "torchtitan", "deepspeed"};
  auto r = PlanJob(request);
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->chosen.has_value());
  const job::ParallelPlan& p = r->chosen->plan;
  ASSERT_TRUE(job::ConfigOf(p).mixed_tp);
  for (const job::StagePlan& s : p.stages) EXPECT_EQ(s.tp * s.dp, p.tp * p.dp);
  for (const FrameworkPlan& f : r->exports) {
    EXPECT_NE(f.refusal.find("this plan's stages take their own"), std::string::npos)
        << f.framework;
    ASSERT_TRUE(f.plan.has_value()) << f.framework;
    EXPECT_FALSE(job::ConfigOf(f.plan->plan).mixed_tp);
    EXPECT_GT(f.plan->iteration_s, r->chosen->iteration_s) << f.framework;
  }
}

TEST(PlanJobTest, AFullyFixedPlanIsJudgedAsGiven) {
  auto r = PlanJob(Llama("tp=4,pp=2,dp=2,zero=1,sp=on,mbs=1,schedule=1f1b,recompute=selective"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const job::ParallelPlan& p = r->chosen->plan;
  EXPECT_EQ(p.tp, 4);
  EXPECT_EQ(p.pp, 2);
  EXPECT_EQ(p.dp, 2);
  EXPECT_EQ(p.zero, 1);
  EXPECT_EQ(p.microbatches, 128);
  for (const job::StagePlan& s : p.stages) EXPECT_EQ(s.recompute, job::Recompute::kSelective);
}

TEST(PlanJobTest, AFixedPlanThatDoesNotFitIsDataNotAnError) {
  auto r = PlanJob(Llama("tp=1,pp=1,dp=16,zero=0,mbs=16,recompute=none"));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->chosen.has_value());
  EXPECT_FALSE(r->chosen->fits);
}

TEST(PlanJobTest, MegatronsLayoutNamesEmbeddingAndLossOnce) {
  job::ParallelPlan p;
  p.pp = 4;
  for (int n : {3, 4, 4, 3}) p.stages.push_back({.layers = n});
  EXPECT_EQ(io::MegatronLayout(p), "Et*3|t*4|t*4|t*3L");
}

TEST(PlanJobTest, TheModelConfigsOfEachFamilyRead) {
  for (const char* name : {"gpt2.json", "mistral-7b.json", "qwen2-0.5b.json", "pythia-2.8b.json"}) {
    PlanRequest r = Llama();
    r.model = kConfigs + name;
    r.cluster = "dgx-a100";
    r.seq_len = 1024;
    r.global_batch = 64;
    auto plan = PlanJob(r);
    ASSERT_TRUE(plan.ok()) << name << ": " << plan.status().message();
    EXPECT_TRUE(plan->chosen->fits) << name;
  }
}

// Piper's inputs planned by Piper's DP give the time per sample Piper's own program
// (msr-fiddle/piper algo.cpp @ d7fc8cf, run on the file's bandwidth and micro-batches;
// docs/planning.md) finds, to the nine digits it prints.
TEST(PlanJobTest, PipersInputsGiveTheTimePerSampleOfPipersOwnProgram) {
  struct Case {
    const char* file;
    int devices;
    double gib;
    double piper;  // its program's optimum
  };
  // BERT at 512 devices runs the table's faster transition on most cells.
  for (const Case& c :
       {Case{"bert32a100.json", 8, 8, 0.166904267}, Case{"bert32a100.json", 32, 8, 0.0417813782},
        Case{"bert32a100.json", 64, 8, 0.0203202247},
        Case{"bert32a100.json", 512, 8, 0.00257874621}, Case{"resnet.json", 4, 8, 129.263104}}) {
    auto r = PlanPiperFile({.path = std::string(DPLACE_SOURCE_DIR "/testdata/piper/") + c.file,
                            .devices = c.devices,
                            .memory_bytes = c.gib * (1 << 30)});
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_NEAR(r->plan.time_per_sample_s, c.piper, 1e-8 * c.piper) << c.file << " " << c.devices;
    EXPECT_LE(r->plan.devices, c.devices);
  }
}

}  // namespace
}  // namespace dplace::run
