// The SVG chart module and the derived report figures (results/report_data.hpp), on hand-built inputs:
// escaping, tick choice, well-formed output without NaN, one polyline per series, scaling efficiency
// and series grouping, the timeline excerpt.
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "cli_fixture.hpp"
#include "reports/svg_chart.hpp"
#include "results/report_data.hpp"
#include "xml_check.hpp"

namespace {

namespace svg = dtsim::reports::svg;
using dtsim::results::ReportData;
using dtsim::results::Result;
using dtsim::testing::occurrences;

// A feasible result on `nodes` 8-GPU nodes with the given throughput.
Result result_on(std::int64_t nodes, double samples_per_s) {
  Result r;
  r.scenario.cluster.nodes = nodes;
  r.scenario.node.gpus_per_node = 8;
  r.throughput.samples_per_s = samples_per_s;
  r.throughput.tokens_per_s = samples_per_s * 2048;
  return r;
}

}  // namespace

TEST_CASE("escape_xml turns markup characters into entities and drops control characters") {
  CHECK(svg::escape_xml("a<b>&\"c'") == "a&lt;b&gt;&amp;&quot;c&#39;");
  CHECK(svg::escape_xml(std::string("x\x01y\tz")) == "xy\tz");
}

TEST_CASE("nice_ticks covers the range with 1-2-5 steps") {
  // [0, 12354] in about 5 steps: raw step 2470.8 -> 5000 (next 1-2-5 value at magnitude 1000).
  const std::vector<double> ticks = svg::nice_ticks(0.0, 12354.0, 5);
  CHECK(ticks == std::vector<double>{0.0, 5000.0, 10000.0, 15000.0});
  // A zero-width range still gives two ticks.
  CHECK(svg::nice_ticks(3.0, 3.0, 5).size() >= 2);
}

TEST_CASE("a line chart draws one polyline per series, is well-formed and never prints NaN") {
  svg::LineChart chart{
      .title = "Throughput <samples/s> & more", .x_label = "GPUs", .y_label = "samples/s", .log2_x = true};
  chart.series.push_back({.name = "tcp", .points = {{8, 98}, {32, 161}, {1024, 4275}}});
  chart.series.push_back({.name = "efa", .points = {{8, 98}, {32, 390}, {1024, 12354}}});
  chart.series.push_back(
      {.name = "bad", .points = {{8, std::numeric_limits<double>::quiet_NaN()}, {16, INFINITY}, {0, 3}}});
  const std::string out = svg::render(chart);
  CHECK(occurrences(out, "<polyline class=\"series\"") == 3);
  // Markers by series: circles for the first (3 points + its legend entry), squares for the second
  // (3 + 1, besides the background rectangle), triangles for the third (its legend entry only: it has
  // no drawable point); dashes by series: solid, "7,4", "2,3".
  CHECK(occurrences(out, "<circle") == 4);
  CHECK(occurrences(out, "<rect") == 1 + 4);
  CHECK(occurrences(out, "<polygon") == 1);
  CHECK(occurrences(out, "stroke-dasharray=\"7,4\"") == 2);  // the second series' line and legend
  CHECK(occurrences(out, "stroke-dasharray=\"2,3\"") == 2);
  CHECK(out.find("nan") == std::string::npos);
  CHECK(out.find("inf") == std::string::npos);
  CHECK(out.find("Throughput &lt;samples/s&gt; &amp; more") != std::string::npos);
  CHECK(out.find(">1024<") != std::string::npos);  // log2 axis ticks at powers of two, 8 .. 1024
  CHECK(out.find(">8<") != std::string::npos);
  CHECK(dtsim::test::xml_error(out).empty());
}

TEST_CASE("a log-log line chart: decade ticks on y, points placed by their logarithm") {
  svg::LineChart chart{.title = "t", .x_label = "GPUs", .y_label = "tokens/s", .log2_x = true, .log10_y = true};
  // y from 150 to 120,000: decades 10^2 .. 10^6 (more than two decades: no 2 and 5 ticks).
  chart.series.push_back({.name = "a", .points = {{8, 150}, {64, 1200}, {512, 120000}}});
  chart.series.push_back({.name = "zero", .points = {{8, 0}, {16, -1}}});  // not drawable on a log axis
  const std::string out = svg::render(chart);
  CHECK(out.find(">100<") != std::string::npos);
  CHECK(out.find(">1M<") != std::string::npos);
  CHECK(out.find(">200<") == std::string::npos);
  // Three points of series a; equal ratios are equal distances: 150 -> 1200 is x8, as is 15,000 -> 120,000.
  CHECK(occurrences(out, "<circle") == 3 + 1);
  CHECK(out.find("nan") == std::string::npos);
  CHECK(dtsim::test::xml_error(out).empty());
  // Two decades or fewer: 1, 2 and 5 ticks.
  svg::LineChart narrow{.title = "t", .log10_y = true};
  narrow.series.push_back({.name = "a", .points = {{1, 150}, {2, 900}}});
  const std::string n = svg::render(narrow);
  CHECK(n.find(">200<") != std::string::npos);
  CHECK(n.find(">500<") != std::string::npos);
}

TEST_CASE("a stacked bar chart draws one rectangle per positive part and the reference line") {
  svg::StackedBarChart chart{.title = "memory", .y_label = "GB", .categories = {"a", "b"}};
  chart.stacks = {{.name = "weights", .values = {1.0, 2.0}}, {.name = "activations", .values = {0.0, 3.0}}};
  chart.reference_y = 80.0;
  chart.reference_label = "capacity 80 GB";
  const std::string out = svg::render(chart);
  CHECK(occurrences(out, "<rect class=\"bar\"") == 3);
  CHECK(out.find("capacity 80 GB") != std::string::npos);
  CHECK(dtsim::test::xml_error(out).empty());
}

TEST_CASE("scaling series: one per fabric, efficiency relative to the smallest GPU count") {
  ReportData data{.kind = dtsim::results::ReportKind::sweep};
  // nodes=1,2,4 (8, 16, 32 GPUs) x fabric=tcp,efa; tcp samples/s 100, 180, 320; efa 100, 200, 400.
  const std::vector<double> tcp = {100, 180, 320}, efa = {100, 200, 400};
  const std::vector<std::int64_t> nodes = {1, 2, 4};
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (const char* fabric : {"tcp", "efa"}) {
      const double x = std::string(fabric) == "tcp" ? tcp[i] : efa[i];
      data.entries.push_back({.label = "p",
                              .knobs = {{"/cluster/nodes", std::to_string(nodes[i])}, {"/fabric", fabric}},
                              .result = result_on(nodes[i], x)});
    }
  }
  // An infeasible point is kept out of the lines.
  data.entries.push_back(
      {.label = "q", .knobs = {{"/cluster/nodes", "8"}, {"/fabric", "tcp"}}, .result = result_on(8, 0.0)});
  data.entries.back().result.status = dtsim::results::Status::infeasible;

  const auto series = dtsim::results::scaling_series(data);
  REQUIRE(series.size() == 2);
  CHECK(series[0].name == "fabric=tcp");
  CHECK(series[1].name == "fabric=efa");
  REQUIRE(series[0].points.size() == 3);
  CHECK(dtsim::results::has_scaling(series));
  // efficiency(N) = (X(N)/N) / (X(8)/8): tcp 16 GPUs (180/16)/(100/8) = 0.9; 32 GPUs (320/32)/(12.5) = 0.8.
  CHECK(series[0].points[0].efficiency == doctest::Approx(1.0));
  CHECK(series[0].points[1].efficiency == doctest::Approx(0.9));
  CHECK(series[0].points[2].efficiency == doctest::Approx(0.8));
  // efa scales linearly: (400/32)/(100/8) = 1.
  CHECK(series[1].points[2].efficiency == doctest::Approx(1.0));
  CHECK(series[0].points[2].gpus == 32);
}

TEST_CASE("scaling series: without knobs every entry is one series - one GPU count shows no scaling") {
  ReportData data;
  data.entries.push_back({.label = "a", .result = result_on(2, 10.0)});
  data.entries.push_back({.label = "b", .result = result_on(2, 12.0)});
  const auto series = dtsim::results::scaling_series(data);
  REQUIRE(series.size() == 1);
  CHECK(series[0].name == "all");
  CHECK_FALSE(dtsim::results::has_scaling(series));
}

TEST_CASE("timeline excerpt keeps the first ranks' tracks, times from the first span") {
  dtsim::results::Trace trace;
  trace.rank_names = {"stage 0", "stage 1", "stage 2"};
  trace.tracks = {{0, "compute"}, {0, "dp comm"}, {1, "compute"}, {2, "compute"}};
  trace.labels = {"fwd", "bwd"};
  trace.spans = {{.track = 0, .label = 0, .start_ns = 1000, .end_ns = 3000},
                 {.track = 1, .label = 1, .start_ns = 2000, .end_ns = 2500},
                 {.track = 2, .label = 0, .start_ns = 3000, .end_ns = 5000},
                 {.track = 3, .label = 0, .start_ns = 0, .end_ns = 9000},
                 {.track = 0, .label = 1, .start_ns = 3000, .end_ns = 3500}};
  const auto excerpt = dtsim::results::timeline_excerpt(trace, 2);
  REQUIRE(excerpt.lanes.size() == 3);  // rank 2's track left out
  CHECK(excerpt.lanes[1] == "stage 0 / dp comm");
  // The last span touches the first one on its lane (3000 ns) with the same category: one mark.
  REQUIRE(excerpt.spans.size() == 3);
  CHECK(excerpt.spans[0].merged == 2);
  CHECK(excerpt.spans[0].end_s == doctest::Approx(2.5e-6));
  // Times from the first kept span (1000 ns): the rank-1 span runs 2000..4000 ns = 2e-6..4e-6 s.
  CHECK(excerpt.spans[2].start_s == doctest::Approx(2e-6));
  CHECK(excerpt.end_s == doctest::Approx(4e-6));
  // Lane 0 is busy 2000 + 500 ns; its share of the excerpt's 4e-6 s is 2.5e-6 / 4e-6 = 0.625.
  CHECK(excerpt.busy_s[0] == doctest::Approx(2.5e-6));
  CHECK(excerpt.busy_share[0] == doctest::Approx(0.625));
  CHECK(excerpt.span_count[0] == 2);
  CHECK(excerpt.span_count[1] == 1);
}
