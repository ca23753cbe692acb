// GEMM timing through cuBLASLt (host code; the CUDA harness). D[m x n] = A[m x k] B[k x n] in the "TN"
// layout every precision supports (A given transposed, column-major; FP8 requires it), FP32
// accumulation; the algorithm is cuBLASLt's first heuristic choice with a 32 MiB workspace. Inputs are
// written on the device (fill_gemm_input, cuda_kernels.hpp): multiples of 1/4 in [-1, 1], exact in every
// input type, so a sample of 16 outputs is checked against an exact host dot product (tolerance: the output
// type's rounding). Precisions: fp32, tf32 (FP32 data, TF32 tensor cores), fp16, bf16 and fp8 (E4M3 inputs,
// BF16 output; compute capability 8.9 and later).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "config/hardware.hpp"

namespace dtsim::calibration::cuda {

struct GemmRun {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  config::Precision precision = config::Precision::bf16;
  std::vector<double> seconds;  // per call, one per repeat
};

class CublasLtGemm {
 public:
  CublasLtGemm();
  ~CublasLtGemm();
  CublasLtGemm(const CublasLtGemm&) = delete;
  CublasLtGemm& operator=(const CublasLtGemm&) = delete;

  // Whether this device runs the precision at all (fp8: compute capability >= 8.9).
  bool device_supports(config::Precision p) const;
  // Times the GEMM; empty when cuBLASLt has no algorithm for it. Throws InternalError on a CUDA error
  // or a wrong result.
  std::optional<GemmRun> time(std::int64_t m, std::int64_t n, std::int64_t k, config::Precision p,
                              int repeats, double min_seconds);

 private:
  struct State;
  std::unique_ptr<State> state_;  // cuBLASLt handle, workspace, stream and events
};

}  // namespace dtsim::calibration::cuda
