#include "calibration/cuda/cublaslt_gemm.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>

#include "calibration/cuda/cuda_check.hpp"
#include "calibration/cuda/cuda_kernels.hpp"
#include "config/scenario.hpp"

namespace dtsim::calibration::cuda {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;

std::size_t bytes_of(GemmElement e) {
  switch (e) {
    case GemmElement::f32:
      return 4;
    case GemmElement::f16:
    case GemmElement::bf16:
      return 2;
    case GemmElement::e4m3:
      return 1;
  }
  return 0;
}

struct Types {
  GemmElement in;
  GemmElement out;
  cudaDataType_t in_type;
  cudaDataType_t out_type;
  cublasComputeType_t compute;
  double out_rounding;  // relative rounding of one output element
  double in_rounding;   // relative rounding of each product's inputs inside the tensor cores (TF32)
};

Types types_of(config::Precision p) {
  switch (p) {
    case config::Precision::fp32:
      return {GemmElement::f32, GemmElement::f32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 0x1p-24, 0.0};
    case config::Precision::tf32:
      return {GemmElement::f32, GemmElement::f32, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32,
              0x1p-24,          0x1p-10};
    case config::Precision::fp16:
      return {GemmElement::f16, GemmElement::f16, CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 0x1p-11, 0.0};
    case config::Precision::bf16:
      return {
          GemmElement::bf16, GemmElement::bf16, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 0x1p-8, 0.0};
    case config::Precision::fp8:
      return {
          GemmElement::e4m3, GemmElement::bf16, CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 0x1p-8, 0.0};
  }
  throw core::InternalError("types_of: invalid Precision value");
}

// The exact value of one stored element (E4M3 has no infinities).
double decode(const unsigned char* in, GemmElement e) {
  switch (e) {
    case GemmElement::f32: {
      float f = 0.0f;
      std::memcpy(&f, in, 4);
      return f;
    }
    case GemmElement::bf16: {
      std::uint16_t h = 0;
      std::memcpy(&h, in, 2);
      const std::uint32_t u = static_cast<std::uint32_t>(h) << 16;
      float f = 0.0f;
      std::memcpy(&f, &u, 4);
      return f;
    }
    case GemmElement::f16: {
      std::uint16_t h = 0;
      std::memcpy(&h, in, 2);
      const int x = (h >> 10) & 0x1F;
      const double mant = h & 0x3FF;
      const double mag = x == 0 ? std::ldexp(mant, -24) : std::ldexp(1.0 + mant / 1024.0, x - 15);
      return (h & 0x8000u) != 0 ? -mag : mag;
    }
    case GemmElement::e4m3: {
      const unsigned b = *in;
      const int x = (b >> 3) & 0xF;
      const double mant = b & 0x7;
      const double mag = x == 0 ? std::ldexp(mant, -9) : std::ldexp(1.0 + mant / 8.0, x - 7);
      return (b & 0x80u) != 0 ? -mag : mag;
    }
  }
  return 0.0;
}

// Copies count elements starting at element offset of device memory to the host, decoded.
std::vector<double> read_back(const void* device, std::size_t offset, std::size_t count, GemmElement e) {
  const std::size_t bytes = bytes_of(e);
  std::vector<unsigned char> raw(count * bytes);
  check(cudaMemcpy(raw.data(), static_cast<const unsigned char*>(device) + offset * bytes, raw.size(),
                   cudaMemcpyDeviceToHost),
        "cudaMemcpy(GEMM sample)");
  std::vector<double> out(count);
  for (std::size_t i = 0; i < count; ++i) out[i] = decode(&raw[i * bytes], e);
  return out;
}

}  // namespace

struct CublasLtGemm::State {
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  int capability = 0;  // major * 10 + minor
};

CublasLtGemm::CublasLtGemm() : state_(std::make_unique<State>()) {
  check(cublasLtCreate(&state_->handle), "cublasLtCreate");
  check(cudaMalloc(&state_->workspace, kWorkspaceBytes), "cudaMalloc(workspace)");
  check(cudaStreamCreate(&state_->stream), "cudaStreamCreate");
  check(cudaEventCreate(&state_->start), "cudaEventCreate");
  check(cudaEventCreate(&state_->stop), "cudaEventCreate");
  int device = 0;
  int major = 0;
  int minor = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device), "cudaDeviceGetAttribute");
  check(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device), "cudaDeviceGetAttribute");
  state_->capability = major * 10 + minor;
}

CublasLtGemm::~CublasLtGemm() {
  cudaEventDestroy(state_->start);
  cudaEventDestroy(state_->stop);
  cudaStreamDestroy(state_->stream);
  cudaFree(state_->workspace);
  cublasLtDestroy(state_->handle);
}

bool CublasLtGemm::device_supports(config::Precision p) const {
  switch (p) {
    case config::Precision::fp32:
    case config::Precision::fp16:
      return true;
    case config::Precision::tf32:
    case config::Precision::bf16:
      return state_->capability >= 80;
    case config::Precision::fp8:
      return state_->capability >= 89;
  }
  return false;
}

std::optional<GemmRun> CublasLtGemm::time(std::int64_t m, std::int64_t n, std::int64_t k, config::Precision p,
                                          int repeats, double min_seconds) {
  const Types t = types_of(p);
  const auto um = static_cast<std::uint64_t>(m);
  const auto un = static_cast<std::uint64_t>(n);
  const auto uk = static_cast<std::uint64_t>(k);
  void* da = nullptr;
  void* db = nullptr;
  void* dd = nullptr;
  check(cudaMalloc(&da, um * uk * bytes_of(t.in)), "cudaMalloc(A)");
  check(cudaMalloc(&db, uk * un * bytes_of(t.in)), "cudaMalloc(B)");
  check(cudaMalloc(&dd, um * un * bytes_of(t.out)), "cudaMalloc(D)");
  fill_gemm_input(da, m * k, 1, t.in);
  fill_gemm_input(db, k * n, 2, t.in);

  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr;
  cublasLtMatrixLayout_t lb = nullptr;
  cublasLtMatrixLayout_t ld = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  check(cublasLtMatmulDescCreate(&op, t.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
  const cublasOperation_t trans = CUBLAS_OP_T;
  const cublasOperation_t none = CUBLAS_OP_N;
  check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &trans, sizeof trans), "TRANSA");
  check(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &none, sizeof none), "TRANSB");
  check(cublasLtMatrixLayoutCreate(&la, t.in_type, uk, um, k), "layout A");
  check(cublasLtMatrixLayoutCreate(&lb, t.in_type, uk, un, k), "layout B");
  check(cublasLtMatrixLayoutCreate(&ld, t.out_type, um, un, m), "layout D");
  check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  const std::size_t workspace = kWorkspaceBytes;
  check(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace,
                                             sizeof workspace),
        "workspace preference");
  cublasLtMatmulHeuristicResult_t heuristic{};
  int found = 0;
  const cublasStatus_t searched =
      cublasLtMatmulAlgoGetHeuristic(state_->handle, op, la, lb, ld, ld, pref, 1, &heuristic, &found);
  std::optional<GemmRun> run;
  if (searched == CUBLAS_STATUS_SUCCESS && found > 0) {
    const float alpha = 1.0f;
    const float beta = 0.0f;
    const auto matmul = [&] {
      check(cublasLtMatmul(state_->handle, op, &alpha, da, la, db, lb, &beta, dd, ld, dd, ld, &heuristic.algo,
                           state_->workspace, workspace, state_->stream),
            "cublasLtMatmul");
    };
    matmul();  // warm-up, also sizes the inner loop
    check(cudaEventRecord(state_->start, state_->stream), "cudaEventRecord");
    matmul();
    check(cudaEventRecord(state_->stop, state_->stream), "cudaEventRecord");
    check(cudaEventSynchronize(state_->stop), "GEMM");
    float ms = 0.0f;
    check(cudaEventElapsedTime(&ms, state_->start, state_->stop), "cudaEventElapsedTime");
    const int calls = std::max(1, static_cast<int>(std::ceil(min_seconds / std::max(ms * 1e-3, 1e-7))));
    run = GemmRun{m, n, k, p, {}};
    for (int r = 0; r < repeats; ++r) {
      check(cudaEventRecord(state_->start, state_->stream), "cudaEventRecord");
      for (int c = 0; c < calls; ++c) matmul();
      check(cudaEventRecord(state_->stop, state_->stream), "cudaEventRecord");
      check(cudaEventSynchronize(state_->stop), "GEMM");
      check(cudaEventElapsedTime(&ms, state_->start, state_->stop), "cudaEventElapsedTime");
      run->seconds.push_back(ms * 1e-3 / calls);
    }
    // Check 16 outputs against a host dot product of the stored inputs: D[i + j m] = sum_p A[p + i k]
    // B[p + j k], within the output's rounding plus FP32 accumulation (k u per term, the worst case of
    // recursive summation) and, for TF32, the tensor cores' rounding of each input.
    for (std::int64_t s = 0; s < 16; ++s) {
      const std::int64_t i = (s * 7919) % m;
      const std::int64_t j = (s * 104729) % n;
      const auto row = read_back(da, static_cast<std::size_t>(i * k), uk, t.in);
      const auto col = read_back(db, static_cast<std::size_t>(j * k), uk, t.in);
      double ref = 0.0;
      double magnitude = 0.0;
      for (std::size_t q = 0; q < uk; ++q) {
        ref += row[q] * col[q];
        magnitude += std::abs(row[q] * col[q]);
      }
      const double got = read_back(dd, static_cast<std::size_t>(i + j * m), 1, t.out)[0];
      const double bound = t.out_rounding * std::abs(ref) +
                           (2.0 * t.in_rounding + static_cast<double>(k) * 0x1p-24) * magnitude + 1e-30;
      if (std::abs(got - ref) > bound) {
        throw core::InternalError(
            fmt::format("cuBLASLt {} GEMM {}x{}x{} returned D[{}][{}] = {} where {} (within {}) was expected",
                        config::to_string(p), m, n, k, i, j, got, ref, bound));
      }
    }
  }
  cublasLtMatmulPreferenceDestroy(pref);
  cublasLtMatrixLayoutDestroy(la);
  cublasLtMatrixLayoutDestroy(lb);
  cublasLtMatrixLayoutDestroy(ld);
  cublasLtMatmulDescDestroy(op);
  cudaFree(da);
  cudaFree(db);
  cudaFree(dd);
  return run;
}

}  // namespace dtsim::calibration::cuda
