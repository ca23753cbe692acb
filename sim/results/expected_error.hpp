// The expected error of a prediction (docs/accuracy.md "Expected error"): the band of signed errors that the
// closest validated regime (config/accuracy.hpp) showed against published or measured runs, stated
// beside the iteration time so that a planner reads it with its uncertainty.
//
// Closest regime: the same workload kind (transformer or layer table) always; then the first level
// that has one, among regimes of the same GPU family (the GPU profile id up to its first '-'):
//   1. the same scale (one GPU, one node, several nodes) and the same software stack;
//   2. the same scale;
//   3. any scale;
// at a level, the regime with the most rows (then the first listed). None: no band, and the reason (a
// GPU family or workload no group validates). The band is the regime's 10th and 90th percentile of (predicted - measured) /
// measured for the iteration time; a regime whose figure is a rate (tokens/s, TFLOP/s, MFU) has its
// errors converted: a rate error e is a time error 1 / (1 + e) - 1, the percentiles swapped. The
// validation groups informed the model, so the band is where past checks fell, not a guarantee:
// independent checks have found predictions more optimistic than their group's band.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/accuracy.hpp"
#include "config/scenario.hpp"

namespace dtsim::results {

struct ExpectedError {
  bool validated = false;   // false: no regime matches (`reason` says why); the figures are unset
  std::string reason;
  double low_pct = 0.0;     // p10 of (predicted - measured) / measured of the iteration time, %
  double high_pct = 0.0;    // p90
  double median_pct = 0.0;  // its median
  std::int64_t n = 0;       // rows of the group
  std::string group;        // the validation group
  std::string source;
  std::string match;  // "GPU, scale and software", "GPU and scale" or "GPU"
  // The measured value a prediction implies at each end of the band: measured = predicted / (1 + error).
  double measured_low(double predicted) const { return predicted / (1.0 + high_pct / 100.0); }
  double measured_high(double predicted) const { return predicted / (1.0 + low_pct / 100.0); }
};

ExpectedError expected_error(const config::Scenario& scenario, const std::vector<config::ValidatedRegime>& regimes);

// The band as every report writes it: "-18% .. +24%" (p10 .. p90, whole percent); "-" when not validated.
std::string band_range(const ExpectedError& e);

}  // namespace dtsim::results
