// HBM bandwidth kernels of the CUDA harness (compiled by nvcc; plain C++ interface). STREAM-style
// copy (b = a) and triad (a = b + s c) over float arrays, timed with CUDA events; bytes counted as
// STREAM does (8 per copied float, 12 per triad float). The result is checked on a sample of elements.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace dtsim::calibration::cuda {

struct MemoryKernelTimes {
  std::string kernel;           // "copy" or "triad"
  double bytes_moved = 0.0;     // per run
  std::vector<double> seconds;  // one per repeat
};

// Runs on the current device; throws InternalError on a CUDA failure or a wrong result.
std::vector<MemoryKernelTimes> time_hbm(std::size_t elements, int repeats);

}  // namespace dtsim::calibration::cuda
