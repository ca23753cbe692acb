#include "calibration/cuda/cuda_kernels.hpp"

#include <cuda_runtime.h>

#include <cmath>
#include <stdexcept>
#include <string>

namespace dtsim::calibration::cuda {

namespace {

__global__ void fill_kernel(float* x, float value, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    x[i] = value;
}

__global__ void copy_kernel(const float* __restrict__ a, float* __restrict__ b, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

__global__ void triad_kernel(float* __restrict__ a, const float* __restrict__ b, const float* __restrict__ c,
                             float s, std::size_t n) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    a[i] = b[i] + s * c[i];
}

void ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(status));
}

}  // namespace

std::vector<MemoryKernelTimes> time_hbm(std::size_t elements, int repeats) {
  float* a = nullptr;
  float* b = nullptr;
  float* c = nullptr;
  ok(cudaMalloc(&a, elements * sizeof(float)), "cudaMalloc");
  ok(cudaMalloc(&b, elements * sizeof(float)), "cudaMalloc");
  ok(cudaMalloc(&c, elements * sizeof(float)), "cudaMalloc");
  int device = 0;
  int sms = 0;
  ok(cudaGetDevice(&device), "cudaGetDevice");
  ok(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  const unsigned blocks = static_cast<unsigned>(sms) * 8U;
  constexpr unsigned kThreads = 512;
  fill_kernel<<<blocks, kThreads>>>(a, 1.0f, elements);
  fill_kernel<<<blocks, kThreads>>>(b, 2.0f, elements);
  fill_kernel<<<blocks, kThreads>>>(c, 0.5f, elements);
  ok(cudaGetLastError(), "fill kernel launch");
  cudaEvent_t start;
  cudaEvent_t stop;
  ok(cudaEventCreate(&start), "cudaEventCreate");
  ok(cudaEventCreate(&stop), "cudaEventCreate");
  MemoryKernelTimes copy{"copy", 2.0 * static_cast<double>(elements) * sizeof(float), {}};
  MemoryKernelTimes triad{"triad", 3.0 * static_cast<double>(elements) * sizeof(float), {}};
  const float scalar = 3.0f;
  for (int r = 0; r < repeats + 1; ++r) {
    float ms = 0.0f;
    ok(cudaEventRecord(start), "cudaEventRecord");
    copy_kernel<<<blocks, kThreads>>>(a, b, elements);
    ok(cudaEventRecord(stop), "cudaEventRecord");
    ok(cudaEventSynchronize(stop), "copy kernel");
    ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (r > 0) copy.seconds.push_back(ms * 1e-3);
    ok(cudaEventRecord(start), "cudaEventRecord");
    triad_kernel<<<blocks, kThreads>>>(a, b, c, scalar, elements);
    ok(cudaEventRecord(stop), "cudaEventRecord");
    ok(cudaEventSynchronize(stop), "triad kernel");
    ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (r > 0) triad.seconds.push_back(ms * 1e-3);
  }
  // Each round: b = a, a = b + 1.5, so after repeats + 1 rounds a = 1 + 1.5 (repeats + 1).
  const float expected = 1.0f + 1.5f * static_cast<float>(repeats + 1);
  for (std::size_t i = 0; i < elements; i += elements / 7 + 1) {
    float value = 0.0f;
    ok(cudaMemcpy(&value, a + i, sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
    if (std::fabs(value - expected) > 1e-5f * expected)
      throw std::runtime_error("triad returned " + std::to_string(value) + " where " +
                               std::to_string(expected) + " was expected");
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
  return {copy, triad};
}

}  // namespace dtsim::calibration::cuda
