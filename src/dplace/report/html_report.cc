#include "dplace/report/html_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "dplace/base/units.h"
#include "dplace/report/result_json.h"

namespace dplace::report {
namespace {

constexpr double kChartWidth = 1000;  // pixels of the time axis

std::string Escape(std::string_view text) {
  std::string out;
  for (char ch : text) {
    switch (ch) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += ch;
    }
  }
  return out;
}

std::string Num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", x);
  return buf;
}

// [start, end] intervals of one lane, merged when the gap between them is under `merge`.
std::vector<std::pair<double, double>> Merge(std::vector<std::pair<double, double>> v,
                                             double merge) {
  std::sort(v.begin(), v.end());
  std::vector<std::pair<double, double>> out;
  for (const auto& iv : v) {
    if (!out.empty() && iv.first - out.back().second < merge) {
      out.back().second = std::max(out.back().second, iv.second);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

const char* kColours[] = {"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2",
                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

std::string BarChart(const Json& results, double lower_bound) {
  double top = lower_bound;
  for (const Json& r : results) top = std::max(top, r["value"].get<double>());
  if (top <= 0) top = 1;
  const double row = 22, label = 130, width = 600;
  const double height = row * static_cast<double>(results.size()) + 24;
  std::string svg = "<svg class=\"chart bars\" width=\"" + Num(label + width + 90) +
                    "\" height=\"" + Num(height) + "\">";
  double y = 4;
  for (const Json& r : results) {
    const double value = r["value"].get<double>();
    const bool feasible = r["feasible"].get<bool>();
    const double w = std::max(1.0, width * value / top);
    svg += "<text x=\"" + Num(label - 6) + "\" y=\"" + Num(y + 14) + "\" text-anchor=\"end\">" +
           Escape(r["placer"].get<std::string>()) + "</text>";
    svg += "<rect class=\"bar\" x=\"" + Num(label) + "\" y=\"" + Num(y) + "\" width=\"" + Num(w) +
           "\" height=\"" + Num(row - 6) + "\" fill=\"" + (feasible ? "#4e79a7" : "#d3d3d3") +
           "\"><title>" + Escape(FormatSeconds(value)) + (feasible ? "" : " (infeasible)") +
           "</title></rect>";
    svg += "<text x=\"" + Num(label + w + 4) + "\" y=\"" + Num(y + 14) + "\">" +
           Escape(FormatSeconds(value)) + (feasible ? "" : " ✗") + "</text>";
    y += row;
  }
  if (lower_bound > 0) {
    const double x = label + width * lower_bound / top;
    svg += "<line class=\"bound\" x1=\"" + Num(x) + "\" x2=\"" + Num(x) + "\" y1=\"0\" y2=\"" +
           Num(y) + "\" stroke=\"#e15759\" stroke-dasharray=\"4 3\"/>";
    svg += "<text x=\"" + Num(x) + "\" y=\"" + Num(y + 14) + "\" fill=\"#e15759\">lower bound " +
           Escape(FormatSeconds(lower_bound)) + "</text>";
  }
  return svg + "</svg>";
}

std::string TimelineChart(const Json& t) {
  const double makespan = t["makespan_s"].get<double>();
  if (makespan <= 0) return "";
  const auto& devices = t["devices"];
  const double lane = 24, label = 70;
  const double height = lane * static_cast<double>(devices.size() + 1) + 20;
  std::string svg = "<svg class=\"chart timeline\" width=\"" + Num(label + kChartWidth + 10) +
                    "\" height=\"" + Num(height) + "\">";
  auto x_of = [&](double s) { return label + kChartWidth * s / makespan; };
  for (size_t d = 0; d < devices.size(); ++d) {
    svg += "<text x=\"" + Num(label - 6) + "\" y=\"" + Num(lane * static_cast<double>(d) + 16) +
           "\" text-anchor=\"end\">" + Escape(devices[d].get<std::string>()) + "</text>";
  }
  svg += "<text x=\"" + Num(label - 6) + "\" y=\"" +
         Num(lane * static_cast<double>(devices.size()) + 16) +
         "\" text-anchor=\"end\">transfers</text>";
  for (const Json& op : t["ops"]) {
    const auto d = op[0].get<size_t>();
    const double s = op[1].get<double>(), e = op[2].get<double>();
    svg += "<rect class=\"op\" x=\"" + Num(x_of(s)) + "\" y=\"" +
           Num(lane * static_cast<double>(d) + 3) + "\" width=\"" +
           Num(std::max(0.5, x_of(e) - x_of(s))) + "\" height=\"" + Num(lane - 6) + "\" fill=\"" +
           kColours[d % std::size(kColours)] + "\"><title>" + Escape(op[3].get<std::string>()) +
           "</title></rect>";
  }
  for (const Json& tr : t["transfers"]) {
    const double s = tr[2].get<double>(), e = tr[3].get<double>();
    svg += "<rect class=\"transfer\" x=\"" + Num(x_of(s)) + "\" y=\"" +
           Num(lane * static_cast<double>(devices.size()) + 3) + "\" width=\"" +
           Num(std::max(0.5, x_of(e) - x_of(s))) + "\" height=\"" + Num(lane - 6) +
           "\" fill=\"#9c755f\" opacity=\"0.5\"/>";
  }
  svg += "<text x=\"" + Num(label) + "\" y=\"" + Num(height - 4) + "\">0</text><text x=\"" +
         Num(label + kChartWidth) + "\" y=\"" + Num(height - 4) + "\" text-anchor=\"end\">" +
         Escape(FormatSeconds(makespan)) + "</text>";
  return svg + "</svg>";
}

std::string ResultsTable(const Json& results, const std::string& best) {
  std::string html =
      "<table><tr><th>placer</th><th>value</th><th>gap to bound</th><th>feasible</th><th>peak "
      "memory</th><th>search time</th><th>note</th></tr>";
  for (const Json& r : results) {
    double peak = 0;
    for (const Json& d : r["devices"]) peak = std::max(peak, d["peak_memory_bytes"].get<double>());
    const std::string placer = r["placer"].get<std::string>();
    char gap[32];
    std::snprintf(gap, sizeof(gap), "%.1f%%", 100 * r["gap"].get<double>());
    html += std::string(placer == best ? "<tr class=\"best\">" : "<tr>") + "<td>" + Escape(placer) +
            "</td><td>" + Escape(FormatSeconds(r["value"].get<double>())) + "</td><td>" + gap +
            "</td><td>" + (r["feasible"].get<bool>() ? "yes" : "no") + "</td><td>" +
            Escape(FormatBytes(peak)) + "</td><td>" +
            Escape(FormatSeconds(r["search_time_s"].get<double>())) + "</td><td>" +
            Escape(r.value("note", r.value("reason", ""))) + "</td></tr>";
  }
  return html + "</table>";
}

// Sets data-rendered on <body> to "ok <charts>" when every chart has a non-empty layout box,
// else to what failed: a headless browser's --dump-dom shows it.
constexpr const char* kCheckScript = R"(<script>
window.addEventListener('load', function () {
  var charts = document.querySelectorAll('svg.chart'), bad = 0;
  charts.forEach(function (c) { var b = c.getBoundingClientRect(); if (!(b.width > 0 && b.height > 0)) bad++; });
  var bars = document.querySelectorAll('rect.bar').length;
  document.body.setAttribute('data-rendered', bad ? 'failed ' + bad : 'ok ' + charts.length + ' charts ' + bars + ' bars');
});
</script>)";

}  // namespace

Json TimelineJson(const sim::Problem& problem, const sim::Timeline& timeline) {
  double makespan = 0;
  for (const auto& op : timeline.ops) makespan = std::max(makespan, op.end_s);
  for (const auto& tr : timeline.transfers) makespan = std::max(makespan, tr.end_s);
  const double pixel = makespan / kChartWidth;
  Json devices = Json::array();
  for (sim::DeviceId d{0}; d < problem.num_devices(); ++d)
    devices.push_back(problem.c().device(d).name);
  // Ops: merged per device; a merged interval is named by its first op and the count.
  std::map<sim::DeviceId, std::vector<std::pair<double, double>>> lanes;
  std::map<std::pair<sim::DeviceId, double>, sim::OpId> first_op;
  for (const auto& op : timeline.ops) {
    lanes[op.device].push_back({op.start_s, op.end_s});
    first_op.emplace(std::make_pair(op.device, op.start_s), op.op);
  }
  Json ops = Json::array();
  for (auto& [d, intervals] : lanes) {
    for (const auto& [s, e] : Merge(intervals, pixel)) {
      auto it = first_op.lower_bound({d, s});
      const std::string name = it != first_op.end() && it->first.first == d
                                   ? problem.g().op(it->second).name
                                   : std::string("ops");
      ops.push_back({d.value(), s, e, name});
    }
  }
  std::vector<std::pair<double, double>> moves;
  for (const auto& tr : timeline.transfers) moves.emplace_back(tr.start_s, tr.end_s);
  Json transfers = Json::array();
  for (const auto& [s, e] : Merge(moves, pixel)) transfers.push_back({-1, -1, s, e});
  return {{"makespan_s", makespan}, {"devices", devices}, {"ops", ops}, {"transfers", transfers}};
}

std::string HtmlReport(const Json& bench, const std::string& summary) {
  std::string html =
      "<!DOCTYPE html><html><head><meta charset=\"utf-8\"><title>dplace bench " +
      Escape(bench.value("suite", "")) +
      "</title><style>body{font:14px sans-serif;margin:2em}table{border-collapse:collapse;margin:"
      "0.5em 0}td,th{border:1px solid #ccc;padding:2px 8px;text-align:right}td:first-child,td:"
      "last-child{text-align:left}tr.best{font-weight:bold;background:#eef5ff}svg text{font:12px "
      "sans-serif}pre{background:#f6f6f6;padding:1em}</style></head><body>";
  html += "<h1>dplace bench: " + Escape(bench.value("suite", "")) + "</h1>";
  if (!summary.empty()) html += "<pre>" + Escape(summary) + "</pre>";
  for (const Json& w : bench["workloads"]) {
    const Json& results = w["results"];
    html += "<section><h2>" + Escape(w["workload"].get<std::string>()) + "</h2>";
    if (results.empty()) {
      html += "<p>no results</p></section>";
      continue;
    }
    std::string best;
    if (w.contains("best")) {
      best = w["best"]["placer"].get<std::string>();
    } else {
      const Json* b = &results[0];
      for (const Json& r : results) {
        const bool better = r["feasible"].get<bool>() != (*b)["feasible"].get<bool>()
                                ? r["feasible"].get<bool>()
                                : r["value"].get<double>() < (*b)["value"].get<double>();
        if (better) b = &r;
      }
      best = (*b)["placer"].get<std::string>();
    }
    html += ResultsTable(results, best);
    html += BarChart(results, w.value("lower_bound", 0.0));
    if (w.contains("timeline")) {
      html += "<h3>timeline of the best placement (" + Escape(best) + ")</h3>" +
              TimelineChart(w["timeline"]);
    }
    html += "</section>";
  }
  return html + kCheckScript + "</body></html>\n";
}

}  // namespace dplace::report
