// SVG charts: fixed-size canvas, a plot area with axes and ticks, marks, a legend on the right.
// Coordinates are written with one decimal; every text goes through escape_xml().
#include "reports/svg_chart.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace dtsim::reports::svg {

namespace {

constexpr std::array kPalette = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                                 "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};

// Dash patterns and marker shapes of line series, by series index modulo 3 and 4: with the palette's
// 10 colours no two of the first 60 series look alike.
constexpr std::array<const char*, 3> kDashes = {"", "7,4", "2,3"};
enum class Marker { circle, square, triangle, diamond };
constexpr std::array kMarkers = {Marker::circle, Marker::square, Marker::triangle, Marker::diamond};

constexpr double kWidth = 760.0;
constexpr double kLegendWidth = 210.0;
constexpr double kLeft = 72.0;
constexpr double kTop = 36.0;

// The plot area inside the canvas.
struct Frame {
  double left = kLeft;
  double top = kTop;
  double width = kWidth - kLeft - kLegendWidth;
  double height = 260.0;
  double bottom() const { return top + height; }
  double right() const { return left + width; }
};

// A tick label: integers as such, large values with k/M, others with 3 significant digits.
std::string tick_text(double v) {
  const double a = std::fabs(v);
  if (a >= 1e6) return fmt::format("{:g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:g}k", v / 1e3);
  if (a == std::floor(a)) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

bool finite(double v) { return std::isfinite(v); }

void open_svg(std::string& out, double width, double height, const std::string& title) {
  fmt::format_to(std::back_inserter(out),
                 R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {0:.0f} {1:.0f}" width="{0:.0f}" )"
                 R"(height="{1:.0f}" font-family="sans-serif" font-size="11" role="img">)"
                 "\n<title>{2}</title>\n"
                 R"(<rect x="0" y="0" width="{0:.0f}" height="{1:.0f}" fill="#ffffff"/>)"
                 "\n"
                 R"(<text x="{3:.1f}" y="20" font-size="14" font-weight="bold">{2}</text>)"
                 "\n",
                 width, height, escape_xml(title), kLeft);
}

void text_at(std::string& out, double x, double y, std::string_view anchor, const std::string& text,
             std::string_view extra = "") {
  fmt::format_to(std::back_inserter(out),
                 R"(<text x="{:.1f}" y="{:.1f}" text-anchor="{}"{}>{}</text>)"
                 "\n",
                 x, y, anchor, extra, escape_xml(text));
}

void line(std::string& out, double x1, double y1, double x2, double y2, std::string_view stroke,
          std::string_view extra = "") {
  fmt::format_to(std::back_inserter(out),
                 R"(<line x1="{:.1f}" y1="{:.1f}" x2="{:.1f}" y2="{:.1f}" stroke="{}"{}/>)"
                 "\n",
                 x1, y1, x2, y2, stroke, extra);
}

// Y axis with grid lines from ticks (ticks.front() at the bottom, ticks.back() at the top); on a log10
// axis the ticks are exponents, labelled with their powers of ten.
void y_axis(std::string& out, const Frame& f, const std::vector<double>& ticks, const std::string& label,
            bool log10 = false) {
  const double lo = ticks.front(), hi = ticks.back();
  for (double t : ticks) {
    const double y = f.bottom() - (t - lo) / (hi - lo) * f.height;
    line(out, f.left, y, f.right(), y, "#e0e0e0");
    text_at(out, f.left - 6, y + 4, "end", tick_text(log10 ? std::pow(10.0, t) : t));
  }
  line(out, f.left, f.top, f.left, f.bottom(), "#333333");
  fmt::format_to(
      std::back_inserter(out),
      R"svg(<text x="14" y="{0:.1f}" text-anchor="middle" transform="rotate(-90 14 {0:.1f})">{1}</text>)svg"
      "\n",
      f.top + f.height / 2, escape_xml(label));
}

// Series i's marker at (x, y), with a tooltip when `tip` is not empty.
void marker(std::string& out, std::size_t i, double x, double y, const std::string& tip) {
  const std::string title = tip.empty() ? std::string() : "<title>" + escape_xml(tip) + "</title>";
  const char* fill = color(i);
  switch (kMarkers[i % kMarkers.size()]) {
    case Marker::circle:
      fmt::format_to(std::back_inserter(out), R"(<circle cx="{:.1f}" cy="{:.1f}" r="3.5" fill="{}">{}</circle>)",
                     x, y, fill, title);
      break;
    case Marker::square:
      fmt::format_to(std::back_inserter(out),
                     R"(<rect x="{:.1f}" y="{:.1f}" width="7" height="7" fill="{}">{}</rect>)", x - 3.5,
                     y - 3.5, fill, title);
      break;
    case Marker::triangle:
      fmt::format_to(std::back_inserter(out),
                     R"(<polygon points="{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}" fill="{}">{}</polygon>)", x,
                     y - 4.5, x - 4.5, y + 3.5, x + 4.5, y + 3.5, fill, title);
      break;
    case Marker::diamond:
      fmt::format_to(std::back_inserter(out),
                     R"(<polygon points="{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}" fill="{}">{}</polygon>)",
                     x, y - 4.5, x + 4.5, y, x, y + 4.5, x - 4.5, y, fill, title);
      break;
  }
  out += "\n";
}

std::string dash_attribute(std::size_t i) {
  const std::string_view d = dash(i);
  return d.empty() ? std::string() : fmt::format(R"( stroke-dasharray="{}")", d);
}

void legend(std::string& out, const Frame& f, const std::vector<std::string>& names, std::string_view shape) {
  double y = f.top + 6;
  const double x = f.right() + 16;
  for (std::size_t i = 0; i < names.size(); ++i, y += 18) {
    if (shape == "line") {
      line(out, x, y, x + 18, y, color(i), R"( stroke-width="2.5")" + dash_attribute(i));
      marker(out, i, x + 9, y, "");
    } else {
      fmt::format_to(std::back_inserter(out),
                     R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"/>)"
                     "\n",
                     x + 3, y - 6, color(i));
    }
    std::string name = names[i];
    if (name.size() > 30) name = name.substr(0, 29) + "\u2026";
    text_at(out, x + 24, y + 4, "start", name);
  }
}

}  // namespace

const char* color(std::size_t i) { return kPalette[i % kPalette.size()]; }

const char* dash(std::size_t i) { return kDashes[i % kDashes.size()]; }

std::string escape_xml(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    switch (c) {
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
      case '\'':
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!finite(lo) || !finite(hi)) return {0.0, 1.0};
  if (hi < lo) std::swap(lo, hi);
  if (hi == lo) hi = lo == 0.0 ? 1.0 : lo + std::fabs(lo);
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (const double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * magnitude;
    if (step >= raw) break;
  }
  const double first = std::floor(lo / step);
  const double last = std::ceil(hi / step - 1e-9);
  std::vector<double> ticks;
  for (double k = first; k <= last + 0.5; k += 1.0) ticks.push_back(k * step);
  if (ticks.size() < 2) ticks.push_back(ticks.back() + step);
  return ticks;
}

namespace {

// Ticks of a log10 axis over [lo, hi] (values > 0), as exponents: decades, with 2 and 5 between them
// when the range spans at most two decades. The first and last ticks bound the axis.
std::vector<double> log_ticks(double lo, double hi) {
  double first = std::floor(std::log10(lo)), last = std::ceil(std::log10(hi));
  if (last <= first) last = first + 1.0;
  std::vector<double> ticks;
  const bool minor = last - first <= 2.0;
  for (double d = first; d <= last + 0.5; d += 1.0) {
    ticks.push_back(d);
    if (minor && d < last - 0.5) {
      ticks.push_back(d + std::log10(2.0));
      ticks.push_back(d + std::log10(5.0));
    }
  }
  // Drop the minor ticks below the lowest value and above the highest (tighter axis).
  while (ticks.size() > 2 && ticks[1] <= std::log10(lo)) ticks.erase(ticks.begin());
  while (ticks.size() > 2 && ticks[ticks.size() - 2] >= std::log10(hi)) ticks.pop_back();
  return ticks;
}

}  // namespace

std::string render(const LineChart& chart) {
  const Frame f;
  // A point is drawn when finite and, on a log axis, positive.
  const auto drawn = [&](const Point& p) {
    return finite(p.x) && finite(p.y) && !(chart.log2_x && p.x <= 0) && !(chart.log10_y && p.y <= 0);
  };
  const auto tx = [&](double x) { return chart.log2_x ? std::log2(x) : x; };
  double x_lo = INFINITY, x_hi = -INFINITY;
  double y_lo = chart.y_from_zero && !chart.log10_y ? 0.0 : INFINITY, y_hi = -INFINITY;
  for (const Series& s : chart.series) {
    for (const Point& p : s.points) {
      if (!drawn(p)) continue;
      x_lo = std::min(x_lo, tx(p.x)), x_hi = std::max(x_hi, tx(p.x));
      y_lo = std::min(y_lo, p.y), y_hi = std::max(y_hi, p.y);
    }
  }
  const bool reference = chart.reference_y && finite(*chart.reference_y) && !(chart.log10_y && *chart.reference_y <= 0);
  if (reference) y_hi = std::max(y_hi, *chart.reference_y), y_lo = std::min(y_lo, *chart.reference_y);
  if (!finite(x_lo)) x_lo = 0.0, x_hi = 1.0;
  if (!finite(y_lo) || !finite(y_hi)) y_lo = chart.log10_y ? 1.0 : 0.0, y_hi = chart.log10_y ? 10.0 : 1.0;
  if (x_hi == x_lo) x_lo -= 1.0, x_hi += 1.0;
  const std::vector<double> y_ticks = chart.log10_y ? log_ticks(y_lo, y_hi) : nice_ticks(y_lo, y_hi * 1.02, 5);
  const auto ty = [&](double y) { return chart.log10_y ? std::log10(y) : y; };
  std::vector<double> x_ticks;
  if (chart.log2_x) {
    x_lo = std::floor(x_lo), x_hi = std::ceil(x_hi);
    const int every = x_hi - x_lo > 10 ? 2 : 1;
    for (double k = x_lo; k <= x_hi + 0.5; k += every) x_ticks.push_back(k);
  } else {
    x_ticks = nice_ticks(x_lo, x_hi, 6);
    x_lo = x_ticks.front(), x_hi = x_ticks.back();
  }
  const auto px = [&](double x) { return f.left + (x - x_lo) / (x_hi - x_lo) * f.width; };
  const auto py = [&](double y) {
    return f.bottom() - (ty(y) - y_ticks.front()) / (y_ticks.back() - y_ticks.front()) * f.height;
  };

  std::string out;
  const double height = f.bottom() + 46;
  open_svg(out, kWidth, height, chart.title);
  y_axis(out, f, y_ticks, chart.y_label, chart.log10_y);
  line(out, f.left, f.bottom(), f.right(), f.bottom(), "#333333");
  for (const double t : x_ticks) {
    const double x = px(t);
    line(out, x, f.bottom(), x, f.bottom() + 4, "#333333");
    text_at(out, x, f.bottom() + 16, "middle",
            chart.log2_x ? fmt::format("{:.0f}", std::exp2(t)) : tick_text(t));
  }
  text_at(out, f.left + f.width / 2, f.bottom() + 36, "middle", chart.x_label);
  if (reference) {
    const double y = py(*chart.reference_y);
    line(out, f.left, y, f.right(), y, "#555555", R"( stroke-width="1.2" stroke-dasharray="3,6")");
    text_at(out, f.right() - 4, y - 4, "end", chart.reference_label, R"( fill="#555555")");
  }
  std::vector<std::string> names;
  for (std::size_t i = 0; i < chart.series.size(); ++i) {
    const Series& s = chart.series[i];
    names.push_back(s.name);
    std::string points;
    std::string marks;
    for (const Point& p : s.points) {
      if (!drawn(p)) continue;
      const double x = px(tx(p.x)), y = py(p.y);
      fmt::format_to(std::back_inserter(points), "{}{:.1f},{:.1f}", points.empty() ? "" : " ", x, y);
      marker(marks, i, x, y, fmt::format("{}: {}, {:.4g}", s.name, tick_text(p.x), p.y));
    }
    fmt::format_to(std::back_inserter(out),
                   R"(<polyline class="series" fill="none" stroke="{}" stroke-width="2.5"{} points="{}"/>)"
                   "\n{}",
                   color(i), dash_attribute(i), points, marks);
  }
  legend(out, f, names, "line");
  out += "</svg>\n";
  return out;
}

std::string render(const StackedBarChart& chart) {
  Frame f;
  const std::size_t n = chart.categories.size();
  double y_hi = 0.0;
  for (std::size_t c = 0; c < n; ++c) {
    double total = 0.0;
    for (const Stack& s : chart.stacks) {
      if (c < s.values.size() && finite(s.values[c])) total += std::max(0.0, s.values[c]);
    }
    y_hi = std::max(y_hi, total);
  }
  if (chart.reference_y && finite(*chart.reference_y)) y_hi = std::max(y_hi, *chart.reference_y);
  for (const double limit : chart.limits) {
    if (finite(limit)) y_hi = std::max(y_hi, limit);
  }
  const std::vector<double> y_ticks = nice_ticks(0.0, y_hi * 1.02, 5);
  const double scale = f.height / (y_ticks.back() - y_ticks.front());
  // Many bars widen the plot (at least kMinSlot per bar) and turn their labels steeper.
  constexpr double kMinSlot = 22.0;
  f.width = std::max(f.width, kMinSlot * static_cast<double>(n));
  const bool slanted = n > 4;
  const int label_angle = n > 12 ? 60 : 35;  // clockwise: labels run down and to the right of their bar
  std::string out;
  open_svg(out, f.right() + kLegendWidth, f.bottom() + (slanted ? 150 : 40), chart.title);
  y_axis(out, f, y_ticks, chart.y_label);
  line(out, f.left, f.bottom(), f.right(), f.bottom(), "#333333");
  const double slot = n > 0 ? f.width / static_cast<double>(n) : f.width;
  const double bar = std::min(60.0, slot * 0.7);
  for (std::size_t c = 0; c < n; ++c) {
    const double x = f.left + slot * (static_cast<double>(c) + 0.5);
    double base = f.bottom();
    for (std::size_t s = 0; s < chart.stacks.size(); ++s) {
      const std::vector<double>& values = chart.stacks[s].values;
      const double v = c < values.size() && finite(values[c]) ? std::max(0.0, values[c]) : 0.0;
      if (v <= 0.0) continue;
      const double h = v * scale;
      fmt::format_to(std::back_inserter(out),
                     R"(<rect class="bar" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}">)"
                     "<title>{}: {}, {:.4g}</title></rect>\n",
                     x - bar / 2, base - h, bar, h, color(s), escape_xml(chart.categories[c]),
                     escape_xml(chart.stacks[s].name), v);
      base -= h;
    }
    if (c < chart.limits.size() && finite(chart.limits[c])) {
      const double y = f.bottom() - chart.limits[c] * scale;
      line(out, x - bar / 2 - 6, y, x + bar / 2 + 6, y, "#d62728",
           R"( stroke-width="2" stroke-dasharray="4,3")");
    }
    std::string name = chart.categories[c];
    if (name.size() > 28) name = name.substr(0, 27) + "\u2026";
    if (slanted) {
      fmt::format_to(
          std::back_inserter(out),
          R"svg(<text x="{0:.1f}" y="{1:.1f}" text-anchor="start" transform="rotate({3} {0:.1f} {1:.1f})">)svg"
          "{2}</text>\n",
          x - 3, f.bottom() + 10, escape_xml(name), label_angle);
    } else {
      text_at(out, x, f.bottom() + 16, "middle", name);
    }
  }
  if (chart.reference_y && finite(*chart.reference_y)) {
    const double y = f.bottom() - *chart.reference_y * scale;
    line(out, f.left, y, f.right(), y, "#d62728", R"( stroke-width="1.5" stroke-dasharray="6,4")");
  }
  std::vector<std::string> names;
  for (const Stack& s : chart.stacks) names.push_back(s.name);
  legend(out, f, names, "box");
  // The reference line and the per-bar marks are legend entries under the stacks' (the plot is busy).
  double legend_y = f.top + 6 + 18 * static_cast<double>(names.size());
  if (chart.reference_y && finite(*chart.reference_y)) {
    line(out, f.right() + 16, legend_y, f.right() + 34, legend_y, "#d62728",
         R"( stroke-width="1.5" stroke-dasharray="6,4")");
    text_at(out, f.right() + 40, legend_y + 4, "start", chart.reference_label);
    legend_y += 18;
  }
  if (!chart.limits.empty()) {
    line(out, f.right() + 16, legend_y, f.right() + 34, legend_y, "#d62728",
         R"( stroke-width="2" stroke-dasharray="4,3")");
    text_at(out, f.right() + 40, legend_y + 4, "start", chart.limits_label);
  }
  out += "</svg>\n";
  return out;
}

std::string render(const TimelineChart& chart) {
  constexpr double kLaneHeight = 18.0;
  constexpr double kLabelWidth = 190.0;
  Frame f;
  f.left = kLabelWidth;
  f.width = kWidth - kLabelWidth - 20.0;
  f.height = kLaneHeight * static_cast<double>(std::max<std::size_t>(1, chart.lanes.size()));
  double x_hi = 0.0;
  for (const Span& s : chart.spans) {
    if (finite(s.end)) x_hi = std::max(x_hi, s.end);
  }
  const std::vector<double> x_ticks = nice_ticks(0.0, x_hi, 6);
  const auto px = [&](double x) {
    return f.left + (x - x_ticks.front()) / (x_ticks.back() - x_ticks.front()) * f.width;
  };
  const double legend_rows = std::ceil(static_cast<double>(chart.legend.size()) / 4.0);
  std::string out;
  open_svg(out, kWidth, f.bottom() + 50 + 18 * legend_rows, chart.title);
  for (std::size_t l = 0; l < chart.lanes.size(); ++l) {
    const double y = f.top + kLaneHeight * static_cast<double>(l);
    if (l % 2 == 0) {
      fmt::format_to(std::back_inserter(out),
                     R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="#f4f4f4"/>)"
                     "\n",
                     f.left, y, f.width, kLaneHeight);
    }
    std::string name = chart.lanes[l];
    if (name.size() > 32) name = name.substr(0, 31) + "\u2026";
    text_at(out, f.left - 6, y + 13, "end", name);
  }
  for (const Span& s : chart.spans) {
    if (!finite(s.start) || !finite(s.end) || s.lane >= chart.lanes.size()) continue;
    const double x = px(s.start);
    const double w = std::max(0.5, px(s.end) - x);
    const double y = f.top + kLaneHeight * static_cast<double>(s.lane) + 2;
    fmt::format_to(
        std::back_inserter(out),
        R"(<rect class="span" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{}</title></rect>)"
        "\n",
        x, y, w, kLaneHeight - 4, color(s.color), escape_xml(s.tooltip));
  }
  line(out, f.left, f.bottom(), f.right(), f.bottom(), "#333333");
  for (const double t : x_ticks) {
    line(out, px(t), f.bottom(), px(t), f.bottom() + 4, "#333333");
    text_at(out, px(t), f.bottom() + 16, "middle", tick_text(t));
  }
  text_at(out, f.left + f.width / 2, f.bottom() + 34, "middle", chart.x_label);
  for (std::size_t i = 0; i < chart.legend.size(); ++i) {
    const double x = f.left + 140.0 * static_cast<double>(i % 4);
    const double y = f.bottom() + 50 + 18 * std::floor(static_cast<double>(i) / 4.0);
    fmt::format_to(std::back_inserter(out),
                   R"(<rect x="{:.1f}" y="{:.1f}" width="12" height="12" fill="{}"/>)"
                   "\n",
                   x, y - 10, color(i));
    text_at(out, x + 16, y, "start", chart.legend[i]);
  }
  out += "</svg>\n";
  return out;
}

}  // namespace dtsim::reports::svg
