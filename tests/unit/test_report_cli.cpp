// `--report FILE` on run, sweep, compare and search, driven in-process through run_cli(): the extension picks
// HTML, Markdown or CSV; anything else is a usage error (exit 2) with nothing written. The HTML of a
// weak-scaling sweep and of a comparison is checked for structure: well-formed XML, the charts and
// their series, one bar per plan, no NaN, escaped text.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

#include "cli/cli.hpp"
#include "cli_fixture.hpp"
#include "reports/report_writer.hpp"
#include "xml_check.hpp"

namespace {

using dtsim::testing::kDefaultScenario;
using dtsim::testing::occurrences;
using dtsim::testing::read_file;
using dtsim::testing::scratch_dir;
const std::string kReportCliSource = DTSIM_SOURCE_DIR;

// The exit status of dtsim with `args`; its standard error into *err_text when given.
int run_status(const std::vector<std::string>& args, std::string* err_text = nullptr) {
  const dtsim::testing::CliOutcome o = dtsim::testing::run_dtsim(args);
  if (err_text) *err_text = o.err;
  return o.status;
}

}  // namespace

TEST_CASE("sweep --report .html: a weak-scaling report with one line per fabric, well-formed, no NaN") {
  const auto dir = scratch_dir("report_sweep");
  const std::string html = (dir / "weak.html").string();
  const int status =
      run_status({"sweep", kDefaultScenario, "--set", "/cluster/nodes=1,2,4", "--set",
                  "/cluster/network/fabric=tcp,efa,infiniband", "--scaling", "weak", "--jobs", "2",
                  "--no-timing", "--report", html, "--out", (dir / "points.jsonl").string()});
  REQUIRE(status == dtsim::cli::kExitOk);
  const std::string text = read_file(html);
  CHECK(dtsim::test::xml_error(text).empty());
  CHECK(text.find("<script") == std::string::npos);
  CHECK(text.find("http://www.w3.org/2000/svg") != std::string::npos);
  CHECK(text.find("nan") == std::string::npos);
  CHECK(text.find("Infinity") == std::string::npos);
  // Throughput (tokens/s of a transformer, log-log), efficiency, model TFLOP/s per GPU and MFU charts,
  // three fabrics each; the title is the scenario's name.
  CHECK(occurrences(text, "<polyline class=\"series\"") == 12);
  CHECK(text.find("<th>fabric=efa tokens/s</th>") != std::string::npos);
  CHECK(text.find("<th>fabric=efa MFU</th>") != std::string::npos);
  CHECK(text.find("Throughput vs GPUs (tokens/s, log-log)") != std::string::npos);
  CHECK(text.find("<h1>gpt-1.3b data-parallel on 2x DGX A100: sweep over /cluster/nodes") != std::string::npos);
  // Breakdown and memory: stacked bars for the 9 points.
  CHECK(occurrences(text, "<svg ") == 6);
  // Scaling, breakdown, memory and all results; no timeline (sweep points carry no trace).
  CHECK(occurrences(text, "<section id=") == 4);
  CHECK(text.find("id=\"timeline\"") == std::string::npos);
  CHECK(text.find("weak scaling") != std::string::npos);
  // Efficiency at the smallest GPU count is 100% by definition.
  CHECK(text.find("<td>100.0%</td>") != std::string::npos);

  // Deterministic: one worker thread gives the same bytes as two.
  const std::string again = (dir / "again.html").string();
  REQUIRE(run_status({"sweep", kDefaultScenario, "--set", "/cluster/nodes=1,2,4", "--set",
                      "/cluster/network/fabric=tcp,efa,infiniband", "--scaling", "weak", "--jobs", "1",
                      "--report", again, "--out", (dir / "p1.jsonl").string()}) == dtsim::cli::kExitOk);
  CHECK(read_file(again) == text);

  // The same sweep as Markdown and CSV: the rows of every point, in index order.
  const std::string md = (dir / "weak.md").string(), csv = (dir / "weak.csv").string();
  REQUIRE(run_status({"sweep", kDefaultScenario, "--set", "/cluster/nodes=1,2,4", "--set",
                      "/cluster/network/fabric=tcp,efa,infiniband", "--scaling", "weak", "--no-timing",
                      "--report", md, "--out", (dir / "p2.jsonl").string()}) == 0);
  REQUIRE(run_status({"sweep", kDefaultScenario, "--set", "/cluster/nodes=1,2,4", "--set",
                      "/cluster/network/fabric=tcp,efa,infiniband", "--scaling", "weak", "--no-timing",
                      "--report", csv, "--out", (dir / "p3.jsonl").string()}) == 0);
  const std::string md_text = read_file(md);
  CHECK(md_text.find("## Scaling") != std::string::npos);
  CHECK(md_text.find("## Memory per GPU") != std::string::npos);
  const std::string csv_text = read_file(csv);
  CHECK(occurrences(csv_text, "\n") == 10);  // header + 9 points
  CHECK(csv_text.rfind("entry,/cluster/nodes,/cluster/network/fabric,name,", 0) == 0);
  CHECK(csv_text.find("\nnodes=1, fabric=tcp,1,tcp,") == std::string::npos);  // labels with ", " are quoted
  CHECK(csv_text.find("\n\"nodes=1, fabric=tcp\",1,tcp,") != std::string::npos);
  CHECK(csv_text.find("\n\"nodes=4, fabric=infiniband\",4,infiniband,") != std::string::npos);
}

TEST_CASE("compare --report .html: one bar per plan in the strategy chart - run --report has a timeline") {
  const auto dir = scratch_dir("report_compare");
  const std::string html = (dir / "compare.html").string();
  const std::string other = kReportCliSource + "/scenarios/llama3-8b-h100-64.json";
  REQUIRE(run_status({"compare", kDefaultScenario, other, "--no-timing", "--report", html}) ==
          dtsim::cli::kExitOk);
  const std::string text = read_file(html);
  CHECK(dtsim::test::xml_error(text).empty());
  CHECK(text.find("id=\"strategies\"") != std::string::npos);
  CHECK(text.find("id=\"scaling\"") == std::string::npos);  // scaling charts are for sweeps
  const std::size_t from = text.find("id=\"strategies\"");
  const std::size_t to = text.find("</section>", from);
  // Throughput and MFU charts, one bar per plan each.
  CHECK(occurrences(text.substr(from, to - from), "<rect class=\"bar\"") == 4);
  // The plans run on GPUs of different capacity: one capacity mark per bar in the memory chart.
  const std::size_t memory = text.find("id=\"memory\"");
  CHECK(occurrences(text.substr(memory, text.find("</svg>", memory) - memory), "stroke-dasharray=\"4,3\"") ==
        3);
  CHECK(text.find("nan") == std::string::npos);

  const std::string run_html = (dir / "run.html").string();
  REQUIRE(run_status({"run", kDefaultScenario, "--no-timing", "--report", run_html}) == dtsim::cli::kExitOk);
  const std::string run_text = read_file(run_html);
  CHECK(dtsim::test::xml_error(run_text).empty());
  CHECK(run_text.find("id=\"timeline\"") != std::string::npos);
  CHECK(occurrences(run_text, "<rect class=\"span\"") > 10);
}

TEST_CASE("compare --report .html of layer-table workloads: their architecture, sync and time to target") {
  const auto dir = scratch_dir("report_data_parallel");
  const std::string html = (dir / "dp.html").string();
  const std::string ps = kReportCliSource + "/scenarios/ps-vs-allreduce/resnet50-64gpu-ps-async.json";
  const std::string allreduce =
      kReportCliSource + "/scenarios/ps-vs-allreduce/resnet50-64gpu-allreduce-sync.json";
  REQUIRE(run_status({"compare", ps, allreduce, "--no-timing", "--report", html}) == dtsim::cli::kExitOk);
  const std::string text = read_file(html);
  CHECK(dtsim::test::xml_error(text).empty());
  CHECK(text.find("id=\"data-parallel\"") != std::string::npos);
  // The transformer strategy table (schedule, pipeline bubble) says nothing about them.
  CHECK(text.find("id=\"strategies\"") == std::string::npos);
  const std::size_t from = text.find("id=\"data-parallel\"");
  const std::string section = text.substr(from, text.find("</section>", from) - from);
  CHECK(section.find("<th>time to target (h)</th>") != std::string::npos);
  CHECK(section.find("<td>parameter_server</td><td>async</td>") != std::string::npos);
  CHECK(section.find("<td>allreduce</td><td>sync</td>") != std::string::npos);
  CHECK(occurrences(section, "<rect class=\"bar\"") == 2);
}

TEST_CASE("plan --report: days and cost per cluster, scaling per node type, the plan's figures as columns") {
  const auto dir = scratch_dir("report_plan");
  const std::string html = (dir / "plan.html").string();
  const std::string csv = (dir / "plan.csv").string();
  const std::string plan = kReportCliSource + "/scenarios/plans/llama3-8b-100b-tokens-weak.json";
  REQUIRE(run_status({"plan", plan, "--no-timing", "--report", html}) == dtsim::cli::kExitOk);
  const std::string text = read_file(html);
  CHECK(dtsim::test::xml_error(text).empty());
  CHECK(text.find("<h1>Llama 3 8B on 100B tokens, batch per GPU held</h1>") != std::string::npos);
  // Days, cost and GPU-hours: one bar per cluster (4 aws-p5 and 3 aws-p4d node counts) each.
  const std::size_t from = text.find("id=\"figures\"");
  REQUIRE(from != std::string::npos);
  const std::string figures = text.substr(from, text.find("</section>", from) - from);
  CHECK(occurrences(figures, "<rect class=\"bar\"") == 3 * 7);
  CHECK(figures.find("<th>days to train</th>") != std::string::npos);
  CHECK(figures.find(">cheapest<") != std::string::npos);
  // Scaling: one line per node type and fabric in each of the four charts.
  CHECK(text.find("id=\"scaling\"") != std::string::npos);
  CHECK(occurrences(text, "<polyline class=\"series\"") == 4 * 2);
  // The CSV report: the knobs, then the figures, then the result columns.
  REQUIRE(run_status({"plan", plan, "--no-timing", "--report", csv}) == dtsim::cli::kExitOk);
  const std::string rows = read_file(csv);
  CHECK(rows.rfind("entry,/cluster/node,/cluster/network/fabric,/cluster/nodes,days to train,cost (USD),GPU-hours,"
                   "strategy,meets the plan,pick,",
                   0) == 0);
  CHECK(occurrences(rows, "\n") == 1 + 7);
}

TEST_CASE("search --report .html: one bar per ranked plan, the plans' degrees as table columns") {
  const auto dir = scratch_dir("report_search");
  const std::string html = (dir / "search.html").string();
  const std::string scenario = kReportCliSource + "/scenarios/llama2-7b-h100-32.json";
  REQUIRE(run_status({"search", scenario, "--top", "3", "--max-micro-batch", "1", "--max-virtual-stages", "1",
                      "--keep-sharding", "--keep-recompute", "--no-timing", "--report", html}) ==
          dtsim::cli::kExitOk);
  const std::string text = read_file(html);
  CHECK(dtsim::test::xml_error(text).empty());
  const std::size_t from = text.find("id=\"strategies\"");
  REQUIRE(from != std::string::npos);
  const std::size_t to = text.find("</section>", from);
  // Throughput and MFU charts, one bar per listed plan (--top 3) each.
  CHECK(occurrences(text.substr(from, to - from), "<rect class=\"bar\"") == 6);
  CHECK(text.find(">tensor<") != std::string::npos);
  CHECK(text.find(">#1 ") != std::string::npos);
  CHECK(text.find("nan") == std::string::npos);
}

TEST_CASE("--report with another extension is a usage error and writes nothing") {
  const auto dir = scratch_dir("report_bad");
  const std::string bad = (dir / "report.txt").string();
  std::string err;
  CHECK(run_status({"run", kDefaultScenario, "--report", bad}, &err) == dtsim::cli::kExitBadInput);
  CHECK(err.find(".html, .md or .csv") != std::string::npos);
  CHECK(run_status({"sweep", kDefaultScenario, "--set", "/cluster/nodes=1,2", "--report", bad}, &err) ==
        dtsim::cli::kExitBadInput);
  CHECK(run_status({"compare", kDefaultScenario, "--report", (dir / "x").string()}, &err) ==
        dtsim::cli::kExitBadInput);
  CHECK_FALSE(std::filesystem::exists(bad));
}

TEST_CASE("sweep --report into a missing folder stops before any point is written") {
  const auto dir = scratch_dir("report_missing");
  const std::string points = (dir / "points.jsonl").string();
  std::string err;
  CHECK(run_status({"sweep", kDefaultScenario, "--set", "/cluster/nodes=1,2", "--scaling", "weak", "--out",
                    points, "--report", (dir / "no" / "such" / "r.html").string()},
                   &err) == dtsim::cli::kExitBadInput);
  CHECK(err.find("folder does not exist") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(points));
}

TEST_CASE("report text is escaped: a title with markup stays text") {
  dtsim::results::ReportData data{.title = "<script>alert('x')</script> & co"};
  dtsim::results::Result r;
  r.scenario.name = "a<b";
  r.scenario.cluster.nodes = 1;
  r.scenario.node.gpus_per_node = 8;
  data.entries.push_back({.label = "a<b", .knobs = {{"/name", "\"quoted\" & <tag>"}}, .result = r});
  std::ostringstream html;
  dtsim::reports::write_html_report(html, data);
  CHECK(dtsim::test::xml_error(html.str()).empty());
  CHECK(html.str().find("<script>") == std::string::npos);
  CHECK(html.str().find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; co") != std::string::npos);
  CHECK(html.str().find("&quot;quoted&quot; &amp; &lt;tag&gt;") != std::string::npos);
}

TEST_CASE("compare --report .md: each result's error band, and goodput columns where a scenario states failures") {
  const auto dir = scratch_dir("report_failures");
  const std::string md = (dir / "compare.md").string();
  const std::string plain = kReportCliSource + "/scenarios/llama3-8b-h100-64.json";
  const std::string failures = kReportCliSource + "/scenarios/failures/llama3-405b-16k-h100-failures.json";
  REQUIRE(run_status({"compare", plain, failures, "--no-timing", "--report", md}) == dtsim::cli::kExitOk);
  const std::string text = read_file(md);
  const std::size_t from = text.find("All results");
  REQUIRE(from != std::string::npos);
  const std::string table = text.substr(from);
  CHECK(table.find("| error band |") != std::string::npos);
  CHECK(table.find("| days with failures (p50) | goodput (p50) |") != std::string::npos);
  // H100 runs on several nodes have a validated band; the first scenario states no failures: "-" there.
  CHECK(occurrences(table, "% .. ") == 2);
  const std::string only_plain = (dir / "plain.md").string();
  REQUIRE(run_status({"compare", plain, plain, "--no-timing", "--report", only_plain}) == dtsim::cli::kExitOk);
  CHECK(read_file(only_plain).find("goodput") == std::string::npos);
}
