// The input of a report: plain records that any command fills and any renderer (reports/html_report,
// markdown_report, report_csv) reads. A command hands over a title, what kind of study it is, and one
// entry per evaluated scenario, in the order the user should see them:
//
//   ReportData data{.title = "GPT-3 175B on 1,024 H100", .kind = ReportKind::search};
//   for (const Candidate& c : ranked)
//     data.entries.push_back({.label = c.name, .knobs = {{"tensor", "8"}, {"pipeline", "16"}}, .result =
//     c.result});
//
// Knobs are the values that distinguish an entry (the swept pointers and their values, or the degrees a
// search chose); they become table columns and name the series of the scaling charts. Derived
// figures (scaling series and efficiency, the timeline excerpt) are computed here, from the results,
// so that renderers only format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "results/result.hpp"

namespace dtsim::results {

enum class ReportKind { run, sweep, compare, search, plan };
enum class ReportScaling { none, weak, strong };

struct Knob {
  std::string key{};    // e.g. "/cluster/network/fabric"
  std::string value{};  // as the user wrote it, e.g. "efa"
};

// A figure a study computed for an entry beyond its Result (a capacity plan's days and cost): a column
// of the results table and, where its value is finite, a bar of that figure's chart.
struct Figure {
  std::string name{};  // e.g. "days to train"
  double value = 0.0;  // NaN: shown as text only
  std::string text{};  // as the tables show it
};

struct ReportEntry {
  std::string label{};  // short row name
  std::vector<Knob> knobs{};
  Result result{};
  std::vector<Figure> figures{};
};

struct ReportData {
  std::string title{};
  ReportKind kind = ReportKind::run;
  ReportScaling scaling = ReportScaling::none;
  std::vector<ReportEntry> entries{};
};

const char* to_string(ReportKind k);
const char* to_string(ReportScaling s);

// The knob keys, in first-seen order over the entries (the table columns).
std::vector<std::string> knob_keys(const ReportData& data);
// The figure names, in first-seen order over the entries.
std::vector<std::string> figure_names(const ReportData& data);
// The entry's figure `name`, or nullptr when it has none.
const Figure* find_figure(const ReportEntry& entry, const std::string& name);

// Throughput against GPU count, one series per combination of the knobs that do not set the GPU count.
// A knob "sets the GPU count" when it takes more than one value and every entry with the same value of
// it has the same GPU count (e.g. /cluster/nodes; not the fabric). Points are feasible entries only,
// sorted by GPU count (then entry order).
//
// Scaling efficiency of a point against the series' smallest GPU count N0 (Amdahl/Gustafson form used
// by scaling studies, e.g. Megatron-LM SC'21 sec. 5.1):
//   efficiency(N) = (X(N) / N) / (X(N0) / N0),   X = samples per second.
// Under weak scaling this is the per-GPU throughput retained; under strong scaling (fixed global batch
// B, X = B / t) it equals speedup / ideal speedup = (t(N0) / t(N)) / (N / N0). The same formula serves
// both.
struct ScalingPoint {
  std::int64_t gpus = 0;
  double samples_per_s = 0.0;
  double tokens_per_s = 0.0;
  double model_tflops_per_gpu = 0.0;
  double mfu = 0.0;
  double efficiency = 0.0;
  std::size_t entry = 0;  // index into ReportData::entries
};
struct ScalingSeries {
  std::string name{};  // "key=value, ..." of the other knobs; "all" when there are none
  std::vector<ScalingPoint> points{};
};
std::vector<ScalingSeries> scaling_series(const ReportData& data);
// True when some series has points at two or more GPU counts (a scaling chart has something to show).
bool has_scaling(const std::vector<ScalingSeries>& series);

// One iteration of a few ranks' streams from a trace, times in seconds from the first span shown.
// Spans of one category that touch on a lane (one ends where the next starts) are one mark, so that
// thousands of per-layer kernels draw as a few bars; span_count and busy_s still count every span.
struct TimelineSpan {
  std::size_t lane = 0;
  double start_s = 0.0;
  double end_s = 0.0;
  graph::Category category = graph::Category::forward;
  std::string label{};     // the first span's
  std::size_t merged = 1;  // spans this mark stands for
};
struct TimelineExcerpt {
  std::vector<std::string> lanes{};  // "rank name / stream"
  std::vector<TimelineSpan> spans{};
  std::vector<double> busy_s{};           // per lane: the sum of its span durations
  std::vector<double> busy_share{};       // per lane: busy_s / end_s (0 when end_s is 0)
  std::vector<std::size_t> span_count{};  // per lane
  double end_s = 0.0;
};
// The tracks of the first max_ranks simulated ranks that hold spans; marks in trace order.
TimelineExcerpt timeline_excerpt(const Trace& trace, std::size_t max_ranks);

}  // namespace dtsim::results
