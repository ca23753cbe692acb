// Summary of repeated timings of one measurement: median, 10th and 90th percentile, mean and standard
// deviation. Percentiles interpolate linearly between order statistics (numpy's default "linear" method:
// position p (n - 1) in the sorted sample). The spread of a calibrated value is reported as p10/p90.
#pragma once

#include <vector>

namespace dtsim::calibration {

struct SampleStats {
  int count = 0;
  double median = 0.0;
  double p10 = 0.0;
  double p90 = 0.0;
  double mean = 0.0;
  double stddev = 0.0;  // sample standard deviation (n - 1); 0 for one sample
};

// Stats of `samples` (at least one; an empty sample is an internal error).
SampleStats sample_stats(std::vector<double> samples);

// Percentile q in [0, 1] of an ascending-sorted, non-empty sample.
double percentile_sorted(const std::vector<double>& sorted, double q);

}  // namespace dtsim::calibration
