#include "calibration/cuda/cublaslt_gemm.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "calibration/cuda/cuda_check.hpp"
#include "config/scenario.hpp"

namespace dtsim::calibration::cuda {

namespace {

constexpr std::size_t kWorkspaceBytes = 32u << 20;

struct Types {
  cudaDataType_t in;
  cudaDataType_t out;
  cublasComputeType_t compute;
  std::size_t in_bytes;
  std::size_t out_bytes;
  double tolerance;  // relative, of the output type
};

Types types_of(config::Precision p) {
  switch (p) {
    case config::Precision::fp32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, 4, 4, 1e-5};
    case config::Precision::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4, 4, 1e-5};
    case config::Precision::fp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, 2, 2, 2e-3};
    case config::Precision::bf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2, 2, 1e-2};
    case config::Precision::fp8:
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, 1, 2, 1e-2};
  }
  throw core::InternalError("types_of: invalid Precision value");
}

// Input value at flat index i: a multiple of 1/4 in [-1, 1] (exact in every input type).
float input_value(std::int64_t i, int salt) { return static_cast<float>((i * 7 + salt * 3) % 9 - 4) / 4.0f; }

std::uint32_t bits_of(float f) {
  std::uint32_t u = 0;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

float float_of(std::uint32_t u) {
  float f = 0.0f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// Encodes an exactly representable normal value or zero (the inputs above) in the input type.
void encode(float v, config::Precision p, unsigned char* out) {
  const std::uint32_t u = bits_of(v);
  const std::uint32_t sign = u >> 31;
  const int exponent = static_cast<int>((u >> 23) & 0xFFu) - 127;
  const std::uint32_t mantissa = u & 0x7FFFFFu;
  switch (p) {
    case config::Precision::fp32:
    case config::Precision::tf32:
      std::memcpy(out, &u, 4);
      return;
    case config::Precision::bf16: {
      const auto h = static_cast<std::uint16_t>(u >> 16);
      std::memcpy(out, &h, 2);
      return;
    }
    case config::Precision::fp16: {
      const auto h =
          v == 0.0f
              ? std::uint16_t{0}
              : static_cast<std::uint16_t>((sign << 15) | (static_cast<std::uint32_t>(exponent + 15) << 10) |
                                           (mantissa >> 13));
      std::memcpy(out, &h, 2);
      return;
    }
    case config::Precision::fp8:
      *out = static_cast<unsigned char>(
          v == 0.0f ? 0u : (sign << 7) | (static_cast<std::uint32_t>(exponent + 7) << 3) | (mantissa >> 20));
      return;
  }
}

float decode_output(const unsigned char* in, config::Precision p) {
  switch (p) {
    case config::Precision::fp32:
    case config::Precision::tf32: {
      float f = 0.0f;
      std::memcpy(&f, in, 4);
      return f;
    }
    case config::Precision::bf16:
    case config::Precision::fp8: {
      std::uint16_t h = 0;
      std::memcpy(&h, in, 2);
      return float_of(static_cast<std::uint32_t>(h) << 16);
    }
    case config::Precision::fp16: {
      std::uint16_t h = 0;
      std::memcpy(&h, in, 2);
      const int e = (h >> 10) & 0x1F;
      const double mant = h & 0x3FF;
      const double mag = e == 0 ? std::ldexp(mant, -24) : std::ldexp(1.0 + mant / 1024.0, e - 15);
      return static_cast<float>((h & 0x8000u) != 0 ? -mag : mag);
    }
  }
  return 0.0f;
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
  std::vector<unsigned char> a(um * uk * t.in_bytes);
  std::vector<unsigned char> b(uk * un * t.in_bytes);
  for (std::int64_t i = 0; i < m * k; ++i)
    encode(input_value(i, 1), p, &a[static_cast<std::size_t>(i) * t.in_bytes]);
  for (std::int64_t i = 0; i < k * n; ++i)
    encode(input_value(i, 2), p, &b[static_cast<std::size_t>(i) * t.in_bytes]);
  void* da = nullptr;
  void* db = nullptr;
  void* dd = nullptr;
  check(cudaMalloc(&da, a.size()), "cudaMalloc(A)");
  check(cudaMalloc(&db, b.size()), "cudaMalloc(B)");
  check(cudaMalloc(&dd, um * un * t.out_bytes), "cudaMalloc(D)");
  check(cudaMemcpy(da, a.data(), a.size(), cudaMemcpyHostToDevice), "cudaMemcpy(A)");
  check(cudaMemcpy(db, b.data(), b.size(), cudaMemcpyHostToDevice), "cudaMemcpy(B)");

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
  check(cublasLtMatrixLayoutCreate(&la, t.in, uk, um, k), "layout A");
  check(cublasLtMatrixLayoutCreate(&lb, t.in, uk, un, k), "layout B");
  check(cublasLtMatrixLayoutCreate(&ld, t.out, um, un, m), "layout D");
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
    // Check 16 outputs against the exact host dot product: D[i + j m] = sum_p A[p + i k] B[p + j k].
    std::vector<unsigned char> d(um * un * t.out_bytes);
    check(cudaMemcpy(d.data(), dd, d.size(), cudaMemcpyDeviceToHost), "cudaMemcpy(D)");
    for (std::int64_t s = 0; s < 16; ++s) {
      const std::int64_t i = (s * 7919) % m;
      const std::int64_t j = (s * 104729) % n;
      double ref = 0.0;
      for (std::int64_t q = 0; q < k; ++q)
        ref += double{input_value(q + i * k, 1)} * input_value(q + j * k, 2);
      const double got = decode_output(&d[static_cast<std::size_t>(i + j * m) * t.out_bytes], p);
      if (std::abs(got - ref) > t.tolerance * (std::abs(ref) + std::sqrt(static_cast<double>(k)))) {
        throw core::InternalError(
            fmt::format("cuBLASLt {} GEMM {}x{}x{} returned D[{}][{}] = {} where {} was expected",
                        config::to_string(p), m, n, k, i, j, got, ref));
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
