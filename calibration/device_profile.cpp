#include "calibration/device_profile.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "config/scenario.hpp"
#include "core/errors.hpp"

namespace dtsim::calibration {

namespace {

double tflops(const GemmTiming& g, double seconds) {
  return 2.0 * static_cast<double>(g.m) * static_cast<double>(g.n) * static_cast<double>(g.k) / seconds /
         1e12;
}

double median_of(std::vector<double> v) { return sample_stats(std::move(v)).median; }

}  // namespace

DeviceProfile device_profile(const DeviceMeasurements& m) {
  DTSIM_CHECK(!m.memory.empty(), "device profile without memory measurements");
  DeviceProfile out;
  config::GpuProfile& gpu = out.gpu;
  gpu.id = m.id;
  gpu.name = m.name;
  gpu.sm_count = m.sm_count;
  gpu.hbm_bytes = m.memory_bytes;

  std::vector<double> low;
  std::vector<double> high;
  std::string peak_text;
  std::string gemm_text;
  for (int p = 0; p < config::kPrecisionCount; ++p) {
    const auto precision = static_cast<config::Precision>(p);
    std::vector<config::GemmMeasurement> rows;
    double best = 0.0;
    for (const auto& g : m.gemms) {
      if (g.precision != precision) continue;
      config::GemmMeasurement row{g.m, g.n, g.k, precision, tflops(g, g.seconds.median)};
      rows.push_back(row);
      best = std::max(best, row.tflops);
      low.push_back(g.seconds.median / g.seconds.p90);
      high.push_back(g.seconds.median / g.seconds.p10);
    }
    if (rows.empty()) continue;
    const auto slot = static_cast<std::size_t>(p);
    const bool known = m.known_peak_tflops[slot].has_value();
    const double peak = known ? *m.known_peak_tflops[slot] : best;
    gpu.peak_tflops[slot] = peak;
    config::GemmCurve prior;  // the tile; k_half and halving_efficiency as GemmCurve's defaults
    prior.tile_m = m.tile_m;
    prior.tile_n = m.tile_n;
    const GemmFit fit = fit_gemm_curve(rows, peak, m.sm_count, prior);
    out.fits[slot] = fit;
    if (precision == m.main_precision) {
      gpu.gemm = fit.curve;
    } else {
      gpu.gemm_by_precision[slot] = fit.curve;
    }
    gpu.gemm_measured.insert(gpu.gemm_measured.end(), rows.begin(), rows.end());
    peak_text +=
        fmt::format("{}{}: {}", peak_text.empty() ? "" : "; ", config::to_string(precision),
                    known ? "supplied peak" : fmt::format("best median of {} measured shapes", rows.size()));
    gemm_text += fmt::format("{}{}: {} shapes, fit error {:.1f}%", gemm_text.empty() ? "" : "; ",
                             config::to_string(precision), fit.rows, fit.mape_percent);
  }
  DTSIM_CHECK(gpu.peak_tflops[static_cast<std::size_t>(m.main_precision)].has_value(),
              "device profile without GEMMs of its main precision");

  double bandwidth = 0.0;
  std::vector<double> mem_low;
  std::vector<double> mem_high;
  std::string mem_text;
  for (const auto& t : m.memory) {
    const double gbytes_per_s = t.bytes_moved / t.seconds.median / 1e9;
    bandwidth = std::max(bandwidth, gbytes_per_s);
    mem_low.push_back(t.seconds.median / t.seconds.p90);
    mem_high.push_back(t.seconds.median / t.seconds.p10);
    mem_text += fmt::format("{}{} {:.1f} GB/s", mem_text.empty() ? "" : ", ", t.kernel, gbytes_per_s);
  }
  gpu.hbm_bandwidth_gbytes_per_s = bandwidth;
  gpu.memory_efficiency = 1.0;
  gpu.attention_efficiency = gpu.gemm.max_efficiency;
  gpu.kernel_launch_us = std::max(m.launch_seconds.median * 1e6, 1e-3);
  gpu.overlap_slowdown = 1.0;
  config::ThroughputSpread spread;
  spread.compute_p10 = std::min(1.0, median_of(low));
  spread.compute_p90 = std::max(1.0, median_of(high));
  spread.memory_p10 = std::min(1.0, median_of(mem_low));
  spread.memory_p90 = std::max(1.0, median_of(mem_high));
  gpu.spread = spread;

  auto& s = out.sources;
  s["peak_tflops"] = fmt::format("measured by {}: {}", m.run, peak_text);
  s["hbm_bytes"] = fmt::format("reported by the device or host to {}", m.run);
  s["hbm_bandwidth_gbytes_per_s"] =
      fmt::format("measured by {}: best median bandwidth of the streaming kernels ({})", m.run, mem_text);
  s["memory_efficiency"] = "1: hbm_bandwidth_gbytes_per_s is already the measured achievable bandwidth";
  s["sm_count"] = fmt::format("reported to {} (SMs, or BLAS threads per rank)", m.run);
  s["gemm"] = fmt::format(
      "fitted by dtsim calibrate (least squares on log throughput, calibration/fit_gemm.hpp) to the measured "
      "table "
      "of {}: {}; tile {} x {} assumed",
      m.run, gemm_text, m.tile_m, m.tile_n);
  s["attention_efficiency"] =
      "not measured: taken equal to gemm.max_efficiency, an upper bound (causal fused attention reached "
      "about half the GEMM rate on an H100 SXM); measure it with calibration/torch/transformer_probe.py "
      "--profile";
  s["kernel_launch_us"] = fmt::format("measured by {}: median time of the smallest GEMM call", m.run);
  s["overlap_slowdown"] = "1: not measured by dtsim calibrate (no compute/communication overlap run)";
  s["spread"] = fmt::format(
      "measured by {}: throughput at the 10th/90th percentile of repeated runs over the median, median over "
      "GEMM "
      "shapes (compute) and memory kernels (memory)",
      m.run);
  return out;
}

}  // namespace dtsim::calibration
