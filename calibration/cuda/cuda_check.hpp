// Error checks for the CUDA harness: a failed CUDA, cuBLASLt or NCCL call is an InternalError naming
// the call and the library's message (the harness cannot measure a device that fails).
#pragma once

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::calibration::cuda {

inline void check(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw core::InternalError(fmt::format("{} failed: {}", what, cudaGetErrorString(status)));
}

inline void check(cublasStatus_t status, const char* what) {
  if (status != CUBLAS_STATUS_SUCCESS)
    throw core::InternalError(fmt::format("{} failed: cuBLAS status {}", what, static_cast<int>(status)));
}

inline void check(ncclResult_t status, const char* what) {
  if (status != ncclSuccess)
    throw core::InternalError(fmt::format("{} failed: {}", what, ncclGetErrorString(status)));
}

}  // namespace dtsim::calibration::cuda
