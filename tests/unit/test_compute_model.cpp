// Compute model (compute/compute_model.hpp, compute/gemm_efficiency.hpp) on the fixture GPU:
// bf16 peak 300 TFLOP/s, GEMM max efficiency 0.8 with 128x128 tiles on 100 SMs, k_half 0,
// 1e12 B/s achievable memory bandwidth, no launch overhead.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "compute/attention_efficiency.hpp"
#include "compute/compute_model.hpp"
#include "compute/gemm_efficiency.hpp"
#include "config/profile_loader.hpp"
#include "config/scenario_loader.hpp"
#include "scenario_fixture.hpp"

using dtsim::graph::ComputeClass;
using dtsim::graph::ComputeOp;
using dtsim::graph::GemmShape;

TEST_CASE("aligned GEMM filling whole waves runs at max efficiency") {
  const auto s = dtsim::testing::fixture_scenario();
  // 1280 x 1280 -> 10 x 10 = 100 tiles of 128x128 on 100 SMs: one full wave, no padding.
  CHECK(dtsim::compute::gemm_efficiency(GemmShape{1280, 1280, 4096, 1}, s.gpu.gemm, s.gpu.sm_count) ==
        doctest::Approx(0.8));
}

TEST_CASE("wave quantization: 101 tiles need two waves, unless smaller tiles do better") {
  const auto s = dtsim::testing::fixture_scenario();
  // 128 x 12928 -> 1 x 101 tiles: two waves -> q_wave = 101/200 = 0.505 at 128x128.
  // 64x128 tiles (x0.9): 202 tiles, 3 waves -> 202/300 = 0.673 * 0.9 = 0.606;
  // 64x64 (x0.81): 404 tiles, 5 waves -> 0.808 * 0.81 = 0.654: the best candidate.
  const double e =
      dtsim::compute::gemm_efficiency(GemmShape{128, 12928, 4096, 1}, s.gpu.gemm, s.gpu.sm_count);
  CHECK(e == doctest::Approx(0.8 * 0.81 * 404.0 / 500.0));
}

TEST_CASE("compute-bound GEMM time is FLOPs over peak x efficiency") {
  const auto s = dtsim::testing::fixture_scenario();
  const dtsim::compute::ComputeModel model(s.gpu, dtsim::config::Precision::bf16);
  ComputeOp op;
  op.cls = ComputeClass::gemm;
  op.gemm = GemmShape{1280, 1280, 4096, 1};
  op.flops = 2.0 * 1280 * 1280 * 4096;  // 13.42 GFLOP
  op.bytes = 2.0 * (1280 * 4096 * 2 + 1280 * 1280);
  // 13.42e9 / (300e12 * 0.8) = 55.9 us; memory 24.2 MB / 1e12 = 24 us -> compute bound.
  CHECK(model.duration_s(op) == doctest::Approx(op.flops / (300e12 * 0.8)));
}

TEST_CASE("memory-bound kernels take bytes over achievable bandwidth plus launch") {
  auto s = dtsim::testing::fixture_scenario();
  s.gpu.kernel_launch_us = 2.0;
  const dtsim::compute::ComputeModel model(s.gpu, dtsim::config::Precision::bf16);
  ComputeOp op;
  op.cls = ComputeClass::memory;
  op.bytes = 1e9;
  // 1e9 / 1e12 = 1 ms + 2 us
  CHECK(model.duration_s(op) == doctest::Approx(1e-3 + 2e-6));
  CHECK(model.duration(op) == 1'002'000);
}

TEST_CASE("a memory-bound op moves its bytes at its class's measured fraction of HBM bandwidth") {
  auto s = dtsim::testing::fixture_scenario();
  s.gpu.kernel_launch_us = 2.0;
  // Fixture: 1e12 B/s achievable = hbm_bandwidth x memory_efficiency; a norm's backward stated at 0.36
  // of the HBM bandwidth, the transpose class left out (it streams, as at memory_efficiency).
  const double hbm_bytes_per_s = s.gpu.hbm_bandwidth_gbytes_per_s * 1e9;
  s.gpu.memory_class_efficiency[static_cast<std::size_t>(dtsim::core::MemoryClass::norm_backward)] = 0.36;
  const dtsim::compute::ComputeModel model(s.gpu, dtsim::config::Precision::bf16);
  ComputeOp op;
  op.cls = ComputeClass::memory;
  op.bytes = 1e9;
  op.kernels = 2;
  op.memory = dtsim::core::MemoryClass::norm_backward;
  // t = bytes / (hbm x 0.36) + 2 launches
  CHECK(model.duration_s(op) == doctest::Approx(1e9 / (hbm_bytes_per_s * 0.36) + 4e-6));
  op.memory = dtsim::core::MemoryClass::transpose;
  CHECK(model.duration_s(op) == doctest::Approx(1e-3 + 4e-6));
  // Every class name reads back as its class, and the names are unique.
  for (std::size_t i = 0; i < dtsim::core::kMemoryClassCount; ++i) {
    const auto c = static_cast<dtsim::core::MemoryClass>(i);
    CHECK(dtsim::core::memory_class_named(dtsim::core::to_string(c)) == c);
  }
  CHECK_FALSE(dtsim::core::memory_class_named("norm").has_value());
}

TEST_CASE("a GEMM with a dimension that is not a whole number of 16-byte vectors runs at the unaligned rate") {
  auto s = dtsim::testing::fixture_scenario();
  s.gpu.gemm_unaligned_odd = 0.18;
  s.gpu.gemm_unaligned_even = 0.36;
  const dtsim::compute::ComputeModel bf16(s.gpu, dtsim::config::Precision::bf16);
  ComputeOp op;
  op.cls = ComputeClass::gemm;
  op.linear_layer = true;
  // 1280 x 1280 x 4096: aligned, max efficiency 0.8 (one full wave); the same with k = 4097 (odd) or
  // 4100 (even, not a multiple of 8 BF16 elements) runs at 0.18 or 0.36 of that rate: t = 2mnk /
  // (300e12 x 0.8 x factor), the curve's q_k = 1 (k_half 0) for every k.
  for (const auto& k_factor : {std::pair{4096, 1.0}, {4097, 0.18}, {4100, 0.36}}) {
    const int k = k_factor.first;
    const double factor = k_factor.second;
    CAPTURE(k);
    op.gemm = GemmShape{1280, 1280, k, 1};
    op.flops = 2.0 * 1280 * 1280 * k;
    CHECK(bf16.duration_s(op) == doctest::Approx(op.flops / (300e12 * 0.8 * factor)));
  }
  // FP32 needs a multiple of 4 elements: k = 4100 is aligned there.
  s.gpu.peak_tflops[static_cast<std::size_t>(dtsim::config::Precision::fp32)] = 300.0;
  const dtsim::compute::ComputeModel fp32(s.gpu, dtsim::config::Precision::fp32);
  op.gemm = GemmShape{1280, 1280, 4100, 1};
  op.flops = 2.0 * 1280 * 1280 * 4100;
  CHECK(fp32.duration_s(op) == doctest::Approx(op.flops / (300e12 * 0.8)));
}

namespace {

// A causal fused-attention op: 300 GFLOP of which half are executed (the other half masked).
ComputeOp causal_attention() {
  ComputeOp op;
  op.cls = ComputeClass::attention;
  op.flops = 300e9;
  op.executed_fraction = 0.5;
  return op;
}

}  // namespace

TEST_CASE("fused attention time counts only the executed fraction") {
  const auto s = dtsim::testing::fixture_scenario();
  const dtsim::compute::ComputeModel model(s.gpu, dtsim::config::Precision::bf16);
  const ComputeOp op = causal_attention();
  // 150e9 / (300e12 * 0.5) = 1 ms
  CHECK(model.duration_s(op) == doctest::Approx(1e-3));
}

TEST_CASE("fused attention with few heads per GPU runs below the profile's rate") {
  auto s = dtsim::testing::fixture_scenario();
  s.gpu.attention_half_waves = 2.0;
  const dtsim::compute::ComputeModel model(s.gpu, dtsim::config::Precision::bf16);
  ComputeOp op = causal_attention();
  // 1 sequence x 25 heads, 4096 query rows -> 25 x 32 = 800 tiles of 128 rows on 100 SMs = 8 waves:
  // efficiency 0.5 x 8 / (8 + 2) = 0.4 -> 150e9 / (300e12 x 0.4) = 1.25 ms.
  op.gemm = GemmShape{4096, 4096, 128, 25};
  CHECK(model.duration_s(op) == doctest::Approx(1.25e-3));
  // A partial tile counts whole: 4000 rows -> 32 tiles still.
  op.gemm = GemmShape{4000, 4000, 128, 25};
  CHECK(model.duration_s(op) == doctest::Approx(1.25e-3));
  // 2 waves (200 tiles): 0.5 x 2 / 4 = 0.25 -> 2 ms; no shape given: the profile's 0.5 -> 1 ms.
  op.gemm = GemmShape{1024, 1024, 128, 25};  // 25 x 8 = 200 tiles
  CHECK(model.duration_s(op) == doctest::Approx(2e-3));
  op.gemm = GemmShape{};
  CHECK(model.duration_s(op) == doctest::Approx(1e-3));
  // With attention_half_keys 1024, 4096 keys run at 4096 / 5120 = 0.8 of that:
  // 8 waves -> 0.5 x 0.8 x 0.8 = 0.32 -> 150e9 / (300e12 x 0.32) = 1.5625 ms.
  s.gpu.attention_half_keys = 1024.0;
  const dtsim::compute::ComputeModel keyed(s.gpu, dtsim::config::Precision::bf16);
  op.gemm = GemmShape{4096, 4096, 128, 25};
  CHECK(keyed.duration_s(op) == doctest::Approx(1.5625e-3));
}

TEST_CASE("shipped GEMM curves reproduce the measurements they were fitted to") {
  // Each GPU profile that carries measured GEMM throughput (hardware_profiles/gpus/*.json, gemm.measured,
  // sources in the file) must reproduce it with its curve for that precision: MAPE <= 15% per GPU and
  // precision (the fits reach 3.8-13%).
  const auto data = dtsim::config::default_data_paths();
  const std::string gpus = data.hardware_profiles + "/gpus";
  for (const auto& id : dtsim::config::list_ids(gpus)) {
    const auto gpu = dtsim::config::load_gpu_profile(data.hardware_profiles, id, {"test", ""});
    for (int p = 0; p < dtsim::config::kPrecisionCount; ++p) {
      double error = 0.0;
      int rows = 0;
      for (const auto& g : gpu.gemm_measured) {
        if (static_cast<int>(g.precision) != p) continue;
        const double peak = *gpu.peak_tflops[static_cast<std::size_t>(p)];
        const double predicted =
            peak * dtsim::compute::gemm_efficiency(GemmShape{g.m, g.n, g.k, 1}, gpu.gemm_curve(g.precision),
                                                   gpu.sm_count);
        error += std::abs(predicted - g.tflops) / g.tflops;
        ++rows;
      }
      if (rows == 0) continue;
      const double mape = 100.0 * error / rows;
      MESSAGE(id << " " << std::string(dtsim::config::to_string(static_cast<dtsim::config::Precision>(p)))
                 << ": GEMM curve MAPE " << mape << "% over " << rows << " measured shapes");
      CHECK(mape <= 15.0);
    }
  }
}

TEST_CASE("shipped attention curves reproduce the measurements they were fitted to") {
  // Each GPU profile that carries measured fused-attention rates (attention_measured) must reproduce
  // them with its attention parameters: MAPE <= 15% per GPU, as for the GEMM curves (the H100 fit
  // reaches about 6%). A measured shape is batch_heads problems of seq query rows against seq keys.
  const auto data = dtsim::config::default_data_paths();
  const std::string gpus = data.hardware_profiles + "/gpus";
  for (const auto& id : dtsim::config::list_ids(gpus)) {
    const auto gpu = dtsim::config::load_gpu_profile(data.hardware_profiles, id, {"test", ""});
    if (gpu.attention_measured.empty()) continue;
    double error = 0.0;
    for (const auto& a : gpu.attention_measured) {
      const double predicted =
          dtsim::compute::attention_efficiency(GemmShape{a.seq, a.seq, 128, a.batch_heads}, gpu);
      error += std::abs(predicted - a.efficiency) / a.efficiency;
    }
    const double mape = 100.0 * error / static_cast<double>(gpu.attention_measured.size());
    MESSAGE(id << ": attention MAPE " << mape << "% over " << gpu.attention_measured.size()
               << " measured shapes");
    CHECK(mape <= 15.0);
  }
}

TEST_CASE("GEMM efficiency of dimensions near 2^63 is computed without overflow") {
  // m = n = batch = 2^63 - 1 (tokens of a huge plan, saturated): 2^56 tiles of 128 a side, so the
  // padding is 1 in 2^63 and q_tile rounds to 1; 2^175 tiles fill their waves: the efficiency is the
  // curve's maximum, 0.8 (k_half 0). The integer tile arithmetic wrapped before.
  const auto s = dtsim::testing::fixture_scenario();
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  const double e =
      dtsim::compute::gemm_efficiency(GemmShape{kMax, kMax, 4096, kMax}, s.gpu.gemm, s.gpu.sm_count);
  CHECK(e == doctest::Approx(0.8));
}
