// The bench manifests expand to the suites' workloads, and a bad manifest is one clear error.
#include "dplace/run/suite.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "dplace/io/test_files.h"

namespace dplace::run {
namespace {

const std::string kRoot = DPLACE_SOURCE_DIR;
const SuiteFolders kFolders{.data = kRoot + "/testdata", .models = kRoot + "/models"};

Suite Load(const std::string& name) {
  auto suite = LoadSuite(name, kRoot + "/bench/suites", kFolders);
  EXPECT_TRUE(suite.ok()) << suite.status().message();
  return suite.ok() ? *suite : Suite{};
}

TEST(SuiteTest, Paper2020HasTheSixteenInputsAndTheExpertSplits) {
  const Suite s = Load("paper2020");
  EXPECT_EQ(s.objective, "throughput");
  EXPECT_FALSE(s.expert_rule);
  ASSERT_EQ(s.workloads.size(), 16u);
  EXPECT_EQ(s.workloads[0].name, "LayerGraphs/bert24_inference");
  EXPECT_EQ(s.workloads[8].name, "OperatorGraphs/bert_L-12_training");
  int with_expert = 0;
  for (const SuiteWorkload& w : s.workloads) with_expert += !w.expert.empty();
  // Six splits, and Inception-v3 and ResNet-50 training take their inference splits.
  EXPECT_EQ(with_expert, 8);
  for (const SuiteWorkload& w : s.workloads) {
    if (w.name == "LayerGraphs/resnet50_training") {
      EXPECT_TRUE(w.expert.ends_with("human-experts/resnet50_inference_expert.json")) << w.expert;
    }
  }
}

TEST(SuiteTest, ModelsAndStepProfilesCrossFilesWithClusters) {
  const Suite models = Load("models");
  EXPECT_TRUE(models.compare);
  ASSERT_EQ(models.workloads.size(), 8u * 3 * 2);
  EXPECT_EQ(models.workloads[0].name, "bert_encoder@k80x4");
  EXPECT_EQ(models.workloads[1].name, "bert_encoder+train@k80x4");
  EXPECT_TRUE(models.workloads[1].training);
  EXPECT_EQ(models.workloads.back().name, "wavenet+train@hetero");
  const Suite profiles = Load("step-profiles");
  ASSERT_EQ(profiles.workloads.size(), 15u * 2);
  EXPECT_EQ(profiles.workloads[14].name, "gnmt_v2_fwd@k80x4");
  EXPECT_EQ(profiles.workloads[15].cluster, "v100x8-nvlink");
  EXPECT_EQ(Load("pipedream").workloads.size(), 14u + 3);
  EXPECT_EQ(Load("latency2020").workloads.size(), 8u);
}

class BadSuiteTest : public ::testing::Test {
 protected:
  StatusOr<Suite> LoadText(const std::string& text) {
    return LoadSuite(dir_.Write("suite_test.json", text), kRoot + "/bench/suites", kFolders);
  }
  dplace::testing::TempDir dir_;  // one per test: tests run in parallel processes
};

TEST_F(BadSuiteTest, EachProblemIsOneClearError) {
  const std::string head =
      R"({"format": "dplace-suite/1", "description": "d", "objective": "step", "placers": ["single"], )";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {head + R"("workloads": [{"files": ["{data}/nothing/*.json"], "name": "x"}]})",
       "no file matches"},
      {head + R"("workloads": [{"files": ["{models}/resnet50.onnx"], "nam": "x"}]})",
       "did you mean 'name'"},
      {R"({"format": "dplace-suite/2"})", "\"format\" must be \"dplace-suite/1\""},
      {R"({"format": "dplace-suite/1", "description": "d", "objective": "fast", "placers": [],
          "workloads": []})",
       "objective: 'fast' is not step"},
      {head + R"("workloads": [{"files": "{models}/resnet50.onnx", "name": "x"}]})", "files"},
      {"{", "suite_test.json"},
  };
  for (const auto& [text, expected] : cases) {
    auto s = LoadText(text);
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidInput);
    EXPECT_NE(s.status().message().find(expected), std::string::npos)
        << s.status().message() << " lacks " << expected;
    EXPECT_EQ(s.status().message().find('\n'), std::string::npos);
  }
}

TEST_F(BadSuiteTest, OptionsAreTakenAsGiven) {
  auto s = LoadText(
      R"({"format": "dplace-suite/1", "description": "d", "objective": "step",
          "placers": ["mcmc"], "options": ["mcmc.chains=3"],
          "workloads": [{"files": ["{models}/resnet50.onnx"], "name": "{stem}",
                         "clusters": ["k80x4"]}]})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->options, std::vector<std::string>{"mcmc.chains=3"});
  ASSERT_EQ(s->workloads.size(), 1u);
  EXPECT_EQ(s->workloads[0].name, "resnet50");
  auto bad = LoadText(
      R"({"format": "dplace-suite/1", "description": "d", "objective": "step",
          "placers": [], "options": "mcmc.chains=3", "workloads": []})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("options"), std::string::npos) << bad.status().message();
}

// A regime's ladder is one regime per rung, NAME@E with a limit of E evaluations.
TEST_F(BadSuiteTest, ALadderIsARegimePerRung) {
  const std::string head =
      R"({"format": "dplace-suite/1", "description": "d", "objective": "step", "placers": [],
          "reference": {"placer": "mcmc", "seconds": 1},
          "workloads": [{"files": ["{models}/resnet50.onnx"], "name": "{stem}"}], )";
  auto s = LoadText(head + R"("regimes": [{"name": "curve", "ladder": [16, 64],
                                          "seconds": 2, "placers": ["mcmc"]}]})");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_EQ(s->regimes.size(), 2u);
  EXPECT_EQ(s->regimes[0].name, "curve@16");
  EXPECT_EQ(s->regimes[0].evaluations, 16);
  EXPECT_EQ(s->regimes[1].name, "curve@64");
  EXPECT_EQ(s->regimes[1].seconds, 2);
  auto bad =
      LoadText(head + R"("regimes": [{"name": "curve", "ladder": [0], "placers": ["mcmc"]}]})");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("a ladder's rungs are evaluations"), std::string::npos)
      << bad.status().message();
  const Suite learned = Load("learned");
  EXPECT_EQ(learned.regimes.back().name, "curve@1024");
  EXPECT_EQ(Load("learned_transfer").workloads.size(), 2 * (11u + 4));
}

TEST(SuiteTest, UnknownNameListsTheSuites) {
  auto s = LoadSuite("model", kRoot + "/bench/suites", kFolders);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("did you mean 'models'"), std::string::npos)
      << s.status().message();
  EXPECT_NE(s.status().message().find("paper2020"), std::string::npos);
}

}  // namespace
}  // namespace dplace::run
