// The content of a report as format-neutral sections: a heading, SVG charts (reports/svg_chart) and a
// table of the numbers they draw. The HTML report shows charts and tables, the Markdown report the
// tables. Sections, in order, each present only when it has something to show:
//   Scaling              throughput and scaling efficiency vs GPUs (log2), one line per series
//                        (results::scaling_series), for a sweep where some series spans two GPU counts
//   Strategy comparison  throughput per entry, for compare and search reports
//   Iteration breakdown  stacked bars of the Breakdown parts per entry
//   Memory per GPU       stacked bars of the Memory parts per entry against the GPU capacity
//   Timeline             one iteration of the first ranks' streams, for an entry with a trace
//   All results          one row per entry: knobs, GPUs, plan, status, iteration time, its error band
//                        (results::band_range), throughput, MFU, memory; with failures stated in some
//                        entry, its median days to train and goodput
// Every figure is a field of a Result or of a derived record in results/report_data.hpp.
#pragma once

#include <string>
#include <vector>

#include "results/report_data.hpp"

namespace dtsim::reports {

struct ReportTable {
  std::vector<std::string> header{};
  std::vector<std::vector<std::string>> rows{};
};

struct ReportSection {
  std::string id{};  // HTML anchor
  std::string heading{};
  std::string note{};               // one line under the heading; may be empty
  std::vector<std::string> svgs{};  // <svg> elements
  ReportTable table{};
};

std::vector<ReportSection> report_sections(const results::ReportData& data);

// The ranks the timeline excerpt shows.
inline constexpr std::size_t kTimelineRanks = 4;

}  // namespace dtsim::reports
