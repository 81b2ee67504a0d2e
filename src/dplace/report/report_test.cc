#include <gtest/gtest.h>

#include "dplace/report/chrome_trace.h"
#include "dplace/report/html_report.h"
#include "dplace/report/table.h"
#include "dplace/sim/step_sim.h"
#include "dplace/sim/test_problems.h"

namespace dplace::report {
namespace {

sim::Problem Chain() {
  graph::GraphBuilder b("chain");
  const auto a = b.AddOp(sim::testing::TimedOp("a", 1), {{2, -1}});
  const auto c = b.AddOp(sim::testing::TimedOp("b", 2));
  b.AddEdge(a, 0, c);
  return sim::testing::Make(b, sim::testing::ThreeDevices());
}

TEST(ChromeTraceTest, ParsesAndHasEveryTrack) {
  sim::Problem p = Chain();
  sim::StepResult r = sim::SimulateStep(p, sim::OnDevices({0, 1}), {.record_timeline = true});
  // Serialise and parse back: what Perfetto reads is the text.
  auto parsed = ParseJson(ChromeTrace(p, r.timeline).dump());
  ASSERT_TRUE(parsed.ok());
  int ops = 0, transfers = 0, counters = 0, flows = 0, processes = 0;
  for (const Json& e : (*parsed)["traceEvents"]) {
    const std::string ph = e["ph"];
    const std::string cat = e.value("cat", "");
    if (ph == "X" && cat == "op") ++ops;
    if (ph == "X" && cat == "transfer") {
      ++transfers;
      EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 1e6);
      EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 2e6);
    }
    if (ph == "C") ++counters;
    if (ph == "s" || ph == "f") ++flows;
    if (ph == "M" && e["name"] == "process_name") ++processes;
  }
  EXPECT_EQ(ops, 2);
  EXPECT_EQ(transfers, 1);
  EXPECT_EQ(flows, 2);
  EXPECT_EQ(processes, 3);
  EXPECT_GE(counters, 3);
}

TEST(TableTest, MarksTheBestAndExplainsInfeasibility) {
  sim::Problem p = Chain();
  PlacerResult good{.placer = "one",
                    .placement = sim::OnDevices({0, 0}),
                    .evaluation = sim::SimulateStep(p, sim::OnDevices({0, 0})).evaluation,
                    .search_time_s = 0.1};
  PlacerResult bad{.placer = "two",
                   .placement = sim::OnDevices({0, 1}),
                   .evaluation = sim::SimulateStep(p, sim::OnDevices({0, 1})).evaluation,
                   .search_time_s = 0.2};
  bad.evaluation.feasible = false;
  bad.evaluation.reason = "device d1: too small";
  const std::string t = ComparisonTable(p, {good, bad}, 0);
  EXPECT_NE(t.find("* one"), std::string::npos) << t;
  EXPECT_NE(t.find("two is infeasible: device d1: too small"), std::string::npos) << t;
  Json j = ResultJson(p, good, p.LowerBound());
  EXPECT_EQ(j["devices"].size(), 3u);
  EXPECT_TRUE(j["devices"][0].contains("busy_s"));
  EXPECT_TRUE(j["devices"][0]["memory_capacity_bytes"].is_null());
}

TEST(HtmlReportTest, TableBarsAndTimelineOfTheBest) {
  sim::Problem p = Chain();
  sim::StepResult one = sim::SimulateStep(p, sim::OnDevices({0, 0}), {.record_timeline = true});
  sim::StepResult two = sim::SimulateStep(p, sim::OnDevices({0, 1}), {.record_timeline = true});
  Json results = Json::array();
  results.push_back(ResultJson(p,
                               {.placer = "single",
                                .placement = sim::OnDevices({0, 0}),
                                .evaluation = one.evaluation,
                                .search_time_s = 0.001},
                               3.0));
  results.push_back(ResultJson(p,
                               {.placer = "<split>",
                                .placement = sim::OnDevices({0, 1}),
                                .evaluation = two.evaluation,
                                .search_time_s = 0.002,
                                .note = "a & b"},
                               3.0));
  const Json bench = {{"suite", "tiny"},
                      {"workloads",
                       {{{"workload", "chain"},
                         {"lower_bound", 3.0},
                         {"results", results},
                         {"timeline", TimelineJson(p, one.timeline)}}}}};
  const std::string html = HtmlReport(bench, "summary line");
  auto count = [&](const std::string& needle) {
    size_t n = 0;
    for (size_t at = html.find(needle); at != std::string::npos; at = html.find(needle, at + 1))
      ++n;
    return n;
  };
  EXPECT_EQ(count("class=\"bar\""), 2u);
  EXPECT_EQ(count("class=\"op\""), 1u);  // a then b on d0, back to back: one merged interval
  EXPECT_EQ(count("class=\"transfer\""), 0u);
  EXPECT_EQ(count("<tr class=\"best\">"), 1u);
  EXPECT_NE(html.find("<td>single</td>"), std::string::npos);  // 3 s beats 1 + 2 + 2 s
  EXPECT_NE(html.find("&lt;split&gt;"), std::string::npos);    // names are escaped
  EXPECT_NE(html.find("a &amp; b"), std::string::npos);
  EXPECT_EQ(html.find("<split>"), std::string::npos);
  EXPECT_NE(html.find("summary line"), std::string::npos);
  EXPECT_EQ(html.find("http"), std::string::npos);  // self-contained
}

}  // namespace
}  // namespace dplace::report
