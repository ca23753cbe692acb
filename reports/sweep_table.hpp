// A sweep as a text table (dtsim sweep --format text), written row by row as the points finish: the
// swept values first, each column named by its pointer's last segment and as wide as its longest
// value, then the point's status, iteration time, tokens/s and samples/s, MFU, memory per GPU and the
// expected-error band of its closest validated regime; an infeasible point's reason ends its row. The
// widths are known before the first point (from the axes), so the
// table streams like the JSON Lines and CSV outputs.
#pragma once

#include <string>
#include <vector>

#include "config/sweep_points.hpp"
#include "results/result.hpp"

namespace dtsim::reports {

class SweepTable {
 public:
  explicit SweepTable(const std::vector<config::SweepAxis>& axes);
  std::string header() const;  // column names, then a rule; ends in '\n'
  // `values`: the point's value of each axis, in axis order.
  std::string row(const std::vector<std::string>& values, const results::Result& r) const;

 private:
  std::vector<std::string> names_;
  std::vector<std::size_t> widths_;
};

}  // namespace dtsim::reports
