// The nearest-rank percentile of a sample (Hyndman & Fan 1996, definition 1): the ceil(q n)-th smallest
// of n values (1-based), the smallest for q = 0. Used where dtsim states percentiles of runs or rows
// (the failures simulation's spread, the validation groups' signed errors), so that every such figure
// is one of the values, never an interpolation between two.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <vector>

namespace dtsim::core {

// `sorted`: ascending, non-empty; q in [0, 1].
inline double nearest_rank(const std::vector<double>& sorted, double q) {
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<std::size_t>(rank, 1)) - 1];
}

}  // namespace dtsim::core
