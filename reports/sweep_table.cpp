#include "reports/sweep_table.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/units.hpp"
#include "results/expected_error.hpp"

namespace dtsim::reports {

namespace sweep_table_detail {

// The result columns after the swept ones: name and width (right-aligned).
struct Column {
  const char* name;
  int width;
};
constexpr Column kColumns[] = {{"status", 10}, {"iter (s)", 10}, {"tokens/s", 11}, {"samples/s", 10},
                               {"MFU", 6},     {"mem GiB", 8},   {"error band", 14}};

}  // namespace sweep_table_detail

SweepTable::SweepTable(const std::vector<config::SweepAxis>& axes) {
  for (const config::SweepAxis& axis : axes) {
    const std::size_t slash = axis.pointer.find_last_of('/');
    std::string name = slash == std::string::npos ? axis.pointer : axis.pointer.substr(slash + 1);
    std::size_t width = name.size();
    for (const std::string& v : axis.values) width = std::max(width, v.size());
    names_.push_back(std::move(name));
    widths_.push_back(width);
  }
}

std::string SweepTable::header() const {
  std::string line;
  for (std::size_t i = 0; i < names_.size(); ++i) line += fmt::format("{:<{}}  ", names_[i], widths_[i]);
  for (const auto& c : sweep_table_detail::kColumns) line += fmt::format("{:>{}} ", c.name, c.width);
  while (!line.empty() && line.back() == ' ') line.pop_back();
  return line + "\n" + std::string(line.size(), '-') + "\n";
}

std::string SweepTable::row(const std::vector<std::string>& values, const results::Result& r) const {
  std::string line;
  for (std::size_t i = 0; i < widths_.size(); ++i) {
    line += fmt::format("{:<{}}  ", i < values.size() ? values[i] : std::string(), widths_[i]);
  }
  const auto& c = sweep_table_detail::kColumns;
  line += fmt::format("{:>{}} ", results::to_string(r.status), c[0].width);
  if (r.iteration_time_s > 0.0) {
    line += fmt::format("{:>{}.4f} {:>{}.0f} {:>{}.1f} {:>{}.1f}% {:>{}.1f} {:>{}}", r.iteration_time_s,
                        c[1].width, r.throughput.tokens_per_s, c[2].width, r.throughput.samples_per_s,
                        c[3].width, 100.0 * r.flops.mfu, c[4].width - 1, r.memory.peak_bytes_per_gpu / core::kGiB,
                        c[5].width, r.expected_error ? results::band_range(*r.expected_error) : "-",
                        c[6].width);
  } else if (r.memory.peak_bytes_per_gpu > 0.0) {
    // Not simulated (out of memory): what it needed.
    line += fmt::format("{:>{}} {:>{}} {:>{}} {:>{}} {:>{}.1f} {:>{}}", "-", c[1].width, "-", c[2].width, "-",
                        c[3].width, "-", c[4].width, r.memory.peak_bytes_per_gpu / core::kGiB, c[5].width, "-",
                        c[6].width);
  }
  while (!line.empty() && line.back() == ' ') line.pop_back();
  if (!r.reason.empty()) line += "  " + r.reason;
  return line + "\n";
}

}  // namespace dtsim::reports
