// Fitting a GPU's (or CPU's) default GEMM efficiency curve (compute/gemm_efficiency.hpp) to measured
// GEMM throughput of one precision.
//
// With the tile (tile_m, tile_n) and the SM (core) count fixed, the curve is
//   efficiency(m, n, k) = max_efficiency * shape(m, n; halving_efficiency) * k / (k + k_half)
// The fit minimizes the squared error of log(predicted / measured) over all rows: for each candidate
// (k_half, halving_efficiency) on a grid (k_half = 0 and 2^i for i = 2..14, halving_efficiency from
// 0.50 to 1.00 in steps of 0.05), the best max_efficiency is closed-form, exp(mean(log(measured
// efficiency / curve at max_efficiency 1))); it is then capped at 1. With fewer rows than the curve's
// three parameters (kMinRowsForShape) the shape terms are not determined (one row fits every k_half
// exactly): k_half and halving_efficiency stay the prior's and only max_efficiency is fitted. The
// fit's error is the mean absolute percentage error of the predicted throughput.
#pragma once

#include <vector>

#include "config/hardware.hpp"

namespace dtsim::calibration {

inline constexpr int kMinRowsForShape = 3;

struct GemmFit {
  config::GemmCurve curve;
  double mape_percent = 0.0;
  int rows = 0;
  bool shape_fitted = false;  // k_half and halving_efficiency fitted (else the prior's)
};

// `rows` are measurements of one precision whose dense peak is `peak_tflops`; at least one row. The
// prior gives the tile (always kept) and, with fewer than kMinRowsForShape rows, k_half and
// halving_efficiency.
GemmFit fit_gemm_curve(const std::vector<config::GemmMeasurement>& rows, double peak_tflops, int sm_count,
                       const config::GemmCurve& prior);

}  // namespace dtsim::calibration
