// A device profile (hardware_profiles/gpus schema) from the harnesses' raw measurements, shared by the
// CPU (OpenBLAS) and CUDA (cuBLASLt) backends of dtsim calibrate.
//
// - GEMM: each shape's throughput is 2 m n k / median time. The peak of a precision is the best median
//   throughput measured in it (the harness cannot know a datasheet figure; a supplied peak replaces
//   it); each precision's curve (compute/gemm_efficiency.hpp) is fitted by fit_gemm.hpp; the profile's
//   main curve is the one of `main_precision`, the others go to by_precision.
// - Memory: the bandwidth is the best median over the streaming kernels (copy, triad, ...), and
//   memory_efficiency is 1 (the measured figure is already achievable bandwidth).
// - Launch cost: the median time of the smallest kernel call.
// - Spread: throughput at the 10th and 90th percentile of repeated runs over the median, taken as the
//   median over GEMM shapes (compute) and over memory kernels (memory).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "calibration/fit_gemm.hpp"
#include "calibration/sample_stats.hpp"
#include "config/hardware.hpp"

namespace dtsim::calibration {

struct GemmTiming {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  config::Precision precision = config::Precision::fp32;
  SampleStats seconds;
};

struct MemoryTiming {
  std::string kernel;        // "copy", "triad", ...
  double bytes_moved = 0.0;  // per run, reads + writes
  SampleStats seconds;
};

struct DeviceMeasurements {
  std::string id;
  std::string name;
  std::string
      run;  // what ran where and when: harness, device, library versions, date (cited by every source)
  std::vector<GemmTiming> gemms;
  std::vector<MemoryTiming> memory;
  SampleStats launch_seconds;
  double memory_bytes = 0.0;  // device (or host) memory capacity
  int sm_count = 1;           // SMs, or BLAS threads per rank on a CPU
  int tile_m = 128;           // output tile assumed by the fitted curve
  int tile_n = 128;
  config::Precision main_precision = config::Precision::fp32;
  std::array<std::optional<double>, config::kPrecisionCount> known_peak_tflops{};
};

struct DeviceProfile {
  config::GpuProfile gpu;
  std::map<std::string, std::string> sources;
  std::array<std::optional<GemmFit>, config::kPrecisionCount> fits{};
};

// Needs at least one GEMM of main_precision and one memory kernel (else an internal error).
DeviceProfile device_profile(const DeviceMeasurements& m);

}  // namespace dtsim::calibration
