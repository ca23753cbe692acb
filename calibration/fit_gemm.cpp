#include "calibration/fit_gemm.hpp"

#include <cmath>
#include <limits>

#include "compute/gemm_efficiency.hpp"
#include "core/errors.hpp"

namespace dtsim::calibration {

namespace {

graph::GemmShape shape_of(const config::GemmMeasurement& g) {
  graph::GemmShape s;
  s.m = g.m;
  s.n = g.n;
  s.k = g.k;
  s.batch = 1;
  return s;
}

struct Candidate {
  config::GemmCurve curve;
  double sq_log_error = std::numeric_limits<double>::infinity();
};

Candidate best_max_efficiency(const std::vector<config::GemmMeasurement>& rows, double peak_tflops,
                              int sm_count, config::GemmCurve curve) {
  curve.max_efficiency = 1.0;
  std::vector<double> log_ratio;
  log_ratio.reserve(rows.size());
  double sum = 0.0;
  for (const auto& g : rows) {
    const double unit = compute::gemm_efficiency(shape_of(g), curve, sm_count);
    const double r = std::log(g.tflops / peak_tflops / unit);
    log_ratio.push_back(r);
    sum += r;
  }
  const double log_me = std::min(0.0, sum / static_cast<double>(rows.size()));
  Candidate c;
  c.curve = curve;
  c.curve.max_efficiency = std::exp(log_me);
  c.sq_log_error = 0.0;
  for (double r : log_ratio) c.sq_log_error += (r - log_me) * (r - log_me);
  return c;
}

}  // namespace

GemmFit fit_gemm_curve(const std::vector<config::GemmMeasurement>& rows, double peak_tflops, int sm_count,
                       const config::GemmCurve& prior) {
  DTSIM_CHECK(!rows.empty() && peak_tflops > 0.0, "GEMM fit without rows or peak");
  GemmFit fit;
  fit.rows = static_cast<int>(rows.size());
  fit.shape_fitted = fit.rows >= kMinRowsForShape;
  Candidate best;
  if (!fit.shape_fitted) {
    best = best_max_efficiency(rows, peak_tflops, sm_count, prior);
  } else {
    std::vector<double> k_halves{0.0};
    for (int i = 2; i <= 14; ++i) k_halves.push_back(std::ldexp(1.0, i));
    for (double k_half : k_halves) {
      for (int h = 10; h <= 20; ++h) {
        config::GemmCurve curve = prior;
        curve.k_half = k_half;
        curve.halving_efficiency = 0.05 * h;
        const Candidate c = best_max_efficiency(rows, peak_tflops, sm_count, curve);
        if (c.sq_log_error < best.sq_log_error) best = c;
      }
    }
  }
  fit.curve = best.curve;
  double abs_err = 0.0;
  for (const auto& g : rows) {
    const double predicted = peak_tflops * compute::gemm_efficiency(shape_of(g), fit.curve, sm_count);
    abs_err += std::abs(predicted - g.tflops) / g.tflops;
  }
  fit.mape_percent = 100.0 * abs_err / static_cast<double>(rows.size());
  return fit;
}

}  // namespace dtsim::calibration
