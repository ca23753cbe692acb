// The data-parallel result's summaries (results/distribution.hpp): nearest-rank percentiles, the rule of
// every percentile dtsim states (core/nearest_rank.hpp), from values and from counts per value.
#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

#include "results/distribution.hpp"

using dtsim::results::distribution_of;
using dtsim::results::distribution_of_counts;

TEST_CASE("distribution: nearest-rank p50 and p99 are the ceil(q n)-th smallest values") {
  // n = 5: p50 is the ceil(2.5) = 3rd smallest, p99 the ceil(4.95) = 5th; mean 15 / 5.
  const auto five = distribution_of({5, 1, 4, 2, 3});
  CHECK(five.mean == 3.0);
  CHECK(five.p50 == 3.0);
  CHECK(five.p99 == 5.0);
  CHECK(five.max == 5.0);
  // 1 .. 100: p50 the 50th smallest (50, not an interpolation or the 51st), p99 the 99th.
  std::vector<double> hundred;
  for (int v = 1; v <= 100; ++v) hundred.push_back(v);
  const auto h = distribution_of(hundred);
  CHECK(h.p50 == 50.0);
  CHECK(h.p99 == 99.0);
  CHECK(h.mean == 50.5);
  const auto none = distribution_of({});
  CHECK(none.max == 0.0);
}

TEST_CASE("distribution: counts per value give what the expanded sample gives") {
  // counts {2, 0, 3, 5}: the sample 0 0 2 2 2 3 3 3 3 3 (n = 10); mean (0 + 6 + 15) / 10 = 2.1; p50 the
  // 5th smallest (2), p99 the ceil(9.9) = 10th (3), max 3.
  const std::vector<std::uint64_t> counts{2, 0, 3, 5};
  const auto d = distribution_of_counts(counts);
  CHECK(d.mean == doctest::Approx(2.1));
  CHECK(d.p50 == 2.0);
  CHECK(d.p99 == 3.0);
  CHECK(d.max == 3.0);
  const auto expanded = distribution_of({0, 0, 2, 2, 2, 3, 3, 3, 3, 3});
  CHECK(d.p50 == expanded.p50);
  CHECK(d.p99 == expanded.p99);
  CHECK(d.max == expanded.max);
  CHECK(distribution_of_counts({0, 0}).max == 0.0);
}
