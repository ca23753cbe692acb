// The mean and coefficient of variation of n draws, for tests of the random factors (core/random.hpp,
// parallel/data_parallel_job.hpp): draw(i) gives the i-th draw.
#pragma once

#include <cmath>

namespace dtsim::testing {

struct Moments {
  double mean = 0.0;
  double cv = 0.0;
};

template <typename Draw>
Moments sample_moments(int n, Draw draw) {
  double sum = 0.0;
  double sum_sq = 0.0;
  for (int i = 0; i < n; ++i) {
    const double x = draw(i);
    sum += x;
    sum_sq += x * x;
  }
  const double mean = sum / n;
  return {mean, std::sqrt(sum_sq / n - mean * mean) / mean};
}

}  // namespace dtsim::testing
