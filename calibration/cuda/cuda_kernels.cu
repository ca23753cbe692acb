#include "calibration/cuda/cuda_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
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

// 16-byte accesses (float4): Hopper reaches its achievable bandwidth only with wide, coalesced loads.
__global__ void copy_kernel(const float4* __restrict__ a, float4* __restrict__ b, std::size_t n4) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    b[i] = a[i];
}

__global__ void triad_kernel(float4* __restrict__ a, const float4* __restrict__ b,
                             const float4* __restrict__ c, float s, std::size_t n4) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n4;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x) {
    const float4 x = b[i];
    const float4 y = c[i];
    a[i] = make_float4(x.x + s * y.x, x.y + s * y.y, x.z + s * y.z, x.w + s * y.w);
  }
}

// Uniform in [-1, 1): the top 24 bits of splitmix64's finalizer applied to (i, salt).
__device__ float gemm_input_value(std::int64_t i, int salt) {
  std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9E3779B97F4A7C15ull + static_cast<std::uint64_t>(salt);
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  x ^= x >> 31;
  return static_cast<float>(x >> 40) * 0x1p-23f - 1.0f;
}

template <typename T>
__device__ T encode_input(float v);
template <>
__device__ float encode_input<float>(float v) {
  return v;
}
template <>
__device__ __half encode_input<__half>(float v) {
  return __float2half_rn(v);
}
template <>
__device__ __nv_bfloat16 encode_input<__nv_bfloat16>(float v) {
  return __float2bfloat16_rn(v);
}
template <>
__device__ __nv_fp8_e4m3 encode_input<__nv_fp8_e4m3>(float v) {
  return __nv_fp8_e4m3(v);
}

template <typename T>
__global__ void gemm_input_kernel(T* x, std::int64_t n, int salt) {
  for (std::int64_t i = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x)
    x[i] = encode_input<T>(gemm_input_value(i, salt));
}

void ok(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + " failed: " + cudaGetErrorString(status));
}

}  // namespace

void fill_gemm_input(void* device_data, std::int64_t count, int salt, GemmElement type) {
  constexpr unsigned kBlocks = 1024;
  constexpr unsigned kThreads = 256;
  switch (type) {
    case GemmElement::f32:
      gemm_input_kernel<<<kBlocks, kThreads>>>(static_cast<float*>(device_data), count, salt);
      break;
    case GemmElement::f16:
      gemm_input_kernel<<<kBlocks, kThreads>>>(static_cast<__half*>(device_data), count, salt);
      break;
    case GemmElement::bf16:
      gemm_input_kernel<<<kBlocks, kThreads>>>(static_cast<__nv_bfloat16*>(device_data), count, salt);
      break;
    case GemmElement::e4m3:
      gemm_input_kernel<<<kBlocks, kThreads>>>(static_cast<__nv_fp8_e4m3*>(device_data), count, salt);
      break;
  }
  ok(cudaGetLastError(), "GEMM input kernel launch");
  ok(cudaDeviceSynchronize(), "GEMM input kernel");
}

std::vector<MemoryKernelTimes> time_hbm(std::size_t elements, int repeats) {
  if (elements % 4 != 0) throw std::runtime_error("time_hbm: elements must be a multiple of 4");
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
    copy_kernel<<<blocks, kThreads>>>(reinterpret_cast<const float4*>(a), reinterpret_cast<float4*>(b),
                                      elements / 4);
    ok(cudaEventRecord(stop), "cudaEventRecord");
    ok(cudaEventSynchronize(stop), "copy kernel");
    ok(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (r > 0) copy.seconds.push_back(ms * 1e-3);
    ok(cudaEventRecord(start), "cudaEventRecord");
    triad_kernel<<<blocks, kThreads>>>(reinterpret_cast<float4*>(a), reinterpret_cast<const float4*>(b),
                                       reinterpret_cast<const float4*>(c), scalar, elements / 4);
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
