// CPU backend of the calibration harnesses: GEMMs through CBLAS (Debian's OpenBLAS) and streaming
// memory kernels (STREAM copy and triad: McCalpin, "Memory Bandwidth and Machine Balance", 1995; bytes
// counted as STREAM does, 16 per copied and 24 per triad element). Every timing is checked: a sample
// of GEMM outputs is compared with a reference dot product and the memory kernels' results are
// verified, so a wrong result is an error, not a fast number.
#pragma once

#include <cstdint>
#include <vector>

#include "calibration/device_profile.hpp"

namespace dtsim::calibration::cpu {

struct GemmShape3 {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
};

// Times C = A B (row-major, fp32, cblas_sgemm) `repeats` times after one warm-up; each timed repeat
// runs the call often enough to last at least min_seconds.
GemmTiming time_sgemm(const GemmShape3& shape, int repeats, double min_seconds);

// The same for a list of shapes, interleaved: each round times every shape once, so a slow or quiet
// period of a shared machine spreads over all shapes instead of biasing the few measured during it.
std::vector<GemmTiming> time_sgemm_sweep(const std::vector<GemmShape3>& shapes, int repeats,
                                         double min_seconds);

// STREAM copy (b = a) and triad (a = b + s c) over arrays of `elements` doubles.
std::vector<MemoryTiming> time_memory(std::int64_t elements, int repeats);

// Median time of a 1 x 1 x 1 cblas_sgemm call: the fixed cost per BLAS call.
SampleStats time_call_overhead(int repeats);

}  // namespace dtsim::calibration::cpu
