// A small SVG chart module: line charts (linear or log2 x axis, e.g. GPU counts; linear or log10 y
// axis; each series with its own colour, dash pattern and marker shape, so lines that overlap stay
// apart and the chart reads in grey), stacked bar charts
// with an optional reference line (e.g. memory capacity), and a timeline of spans on lanes. Each
// render() returns one self-contained <svg> element (inline styles, no scripts, no external
// references) with axes, ticks, a legend and every text XML-escaped. Non-finite values are skipped, so
// no NaN or Inf ever reaches the output. Layout is fixed-size (viewBox), so the same input gives the
// same bytes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dtsim::reports::svg {

struct Point {
  double x = 0.0;
  double y = 0.0;
};

struct Series {
  std::string name{};
  std::vector<Point> points{};  // drawn in order
};

struct LineChart {
  std::string title{};
  std::string x_label{};
  std::string y_label{};
  bool log2_x = false;  // ticks at powers of two; x must be > 0
  bool log10_y = false;  // ticks at 1, 2 and 5 times powers of ten; y must be > 0 (y_from_zero ignored)
  bool y_from_zero = true;
  std::vector<Series> series{};
  std::optional<double> reference_y{};  // a dashed horizontal line, e.g. 100% efficiency
  std::string reference_label{};
};

struct Stack {
  std::string name{};            // legend entry
  std::vector<double> values{};  // one per category; negative values are drawn as zero
};

struct StackedBarChart {
  std::string title{};
  std::string y_label{};
  std::vector<std::string> categories{};  // one bar each
  std::vector<Stack> stacks{};            // bottom to top
  std::optional<double> reference_y{};    // a dashed horizontal line, e.g. memory capacity
  std::string reference_label{};
  std::vector<double> limits{};  // when not empty: one dashed mark over each bar (e.g. each bar's capacity)
  std::string limits_label{};    // legend entry of the marks
};

struct Span {
  std::size_t lane = 0;
  double start = 0.0;
  double end = 0.0;
  std::size_t color = 0;  // index into the legend (and the palette)
  std::string tooltip{};  // <title> of the rectangle
};

struct TimelineChart {
  std::string title{};
  std::string x_label{};
  std::vector<std::string> lanes{};
  std::vector<std::string> legend{};
  std::vector<Span> spans{};
};

std::string render(const LineChart& chart);
std::string render(const StackedBarChart& chart);
std::string render(const TimelineChart& chart);

// Text for XML content and attribute values: & < > " ' as entities; control characters other than
// tab, LF and CR (not allowed in XML 1.0) dropped.
std::string escape_xml(std::string_view text);

// "Nice" tick values (1, 2 or 5 times a power of ten) covering [lo, hi], about `target` of them.
std::vector<double> nice_ticks(double lo, double hi, int target);

// The palette colour of series i (cycles).
const char* color(std::size_t i);
// The stroke-dasharray of line series i ("" for solid; cycles with a period prime to the palette's).
const char* dash(std::size_t i);

}  // namespace dtsim::reports::svg
