#include "calibration/sample_stats.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace dtsim::calibration {

double percentile_sorted(const std::vector<double>& sorted, double q) {
  DTSIM_CHECK(!sorted.empty(), "percentile of an empty sample");
  const double pos = q * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

SampleStats sample_stats(std::vector<double> samples) {
  DTSIM_CHECK(!samples.empty(), "stats of an empty sample");
  std::sort(samples.begin(), samples.end());
  SampleStats s;
  s.count = static_cast<int>(samples.size());
  s.median = percentile_sorted(samples, 0.5);
  s.p10 = percentile_sorted(samples, 0.1);
  s.p90 = percentile_sorted(samples, 0.9);
  double sum = 0.0;
  for (double x : samples) sum += x;
  s.mean = sum / static_cast<double>(samples.size());
  if (samples.size() > 1) {
    double sq = 0.0;
    for (double x : samples) sq += (x - s.mean) * (x - s.mean);
    s.stddev = std::sqrt(sq / static_cast<double>(samples.size() - 1));
  }
  return s;
}

}  // namespace dtsim::calibration
