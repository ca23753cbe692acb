// Device kernels of the CUDA harness (compiled by nvcc; plain C++ interface).
// - HBM bandwidth: STREAM-style copy (b = a) and triad (a = b + s c) over float arrays, timed with CUDA
//   events; bytes counted as STREAM does (8 per copied float, 12 per triad float). The result is
//   checked on a sample of elements.
// - GEMM inputs, written on the device: uniform random values in [-1, 1) from an integer hash of the
//   element's index and a salt, rounded to the input type. Full mantissas matter: patterned or
//   low-entropy data toggles fewer bits, draws less power and runs faster than real data (on an H100 SXM,
//   inputs of a few quarter-steps ran the same 239 bf16 GEMMs a median 10% and up to 35% faster than
//   these, tf32 and fp16 11% faster; fp32 and fp8 alike). The GEMM check reads the
//   stored inputs back, so the host needs no copy of the generator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::calibration::cuda {

// The element types GEMMs read and write (IEEE fp32, fp16, bf16; OCP FP8 E4M3).
enum class GemmElement { f32, f16, bf16, e4m3 };

// Writes count random inputs (salt selects the sequence) to device memory in the given type and waits
// for them; throws std::runtime_error on a CUDA failure.
void fill_gemm_input(void* device_data, std::int64_t count, int salt, GemmElement type);

struct MemoryKernelTimes {
  std::string kernel;           // "copy" or "triad"
  double bytes_moved = 0.0;     // per run
  std::vector<double> seconds;  // one per repeat
};

// Runs on the current device over three arrays of `elements` floats (a multiple of 4); throws
// std::runtime_error on a CUDA failure or a wrong result.
std::vector<MemoryKernelTimes> time_hbm(std::size_t elements, int repeats);

}  // namespace dtsim::calibration::cuda
