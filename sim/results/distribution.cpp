#include "results/distribution.hpp"

#include <algorithm>
#include <cmath>

#include "core/nearest_rank.hpp"

namespace dtsim::results {

Distribution distribution_of(std::vector<double> values) {
  Distribution d;
  if (values.empty()) return d;
  std::sort(values.begin(), values.end());
  double sum = 0.0;
  for (const double v : values) sum += v;
  d.mean = sum / static_cast<double>(values.size());
  d.p50 = core::nearest_rank(values, 0.50);
  d.p99 = core::nearest_rank(values, 0.99);
  d.max = values.back();
  return d;
}

Distribution distribution_of_counts(const std::vector<std::uint64_t>& counts) {
  Distribution d;
  std::uint64_t n = 0;
  double sum = 0.0;
  for (std::size_t v = 0; v < counts.size(); ++v) {
    n += counts[v];
    sum += static_cast<double>(v) * static_cast<double>(counts[v]);
  }
  if (n == 0) return d;
  // core::nearest_rank over the expanded sample: the ceil(q n)-th smallest value (1-based, at least the
  // first), found by counting.
  const auto quantile = [&](double q) {
    const auto rank = std::max<std::uint64_t>(1, static_cast<std::uint64_t>(std::ceil(q * static_cast<double>(n))));
    std::uint64_t seen = 0;
    for (std::size_t v = 0; v < counts.size(); ++v) {
      seen += counts[v];
      if (seen >= rank) return static_cast<double>(v);
    }
    return static_cast<double>(counts.size() - 1);
  };
  d.mean = sum / static_cast<double>(n);
  d.p50 = quantile(0.50);
  d.p99 = quantile(0.99);
  d.max = quantile(1.0);
  return d;
}

}  // namespace dtsim::results
