// Compute model (compute/compute_model.hpp, compute/gemm_efficiency.hpp) on the fixture GPU:
// bf16 peak 300 TFLOP/s, GEMM max efficiency 0.8 with 128x128 tiles on 100 SMs, k_half 0,
// 1e12 B/s achievable memory bandwidth, no launch overhead.
#include <doctest/doctest.h>

#include "compute/compute_model.hpp"
#include "compute/gemm_efficiency.hpp"
#include "scenario_fixture.hpp"

using dtsim::graph::ComputeClass;
using dtsim::graph::ComputeOp;
using dtsim::graph::GemmShape;

TEST_CASE("aligned GEMM filling whole waves runs at max efficiency") {
  const auto s = dtsim::testing::fixture_scenario();
  // 1280 x 1280 -> 10 x 10 = 100 tiles of 128x128 on 100 SMs: one full wave, no padding.
  CHECK(dtsim::compute::gemm_efficiency(GemmShape{1280, 1280, 4096, 1}, s.gpu) == doctest::Approx(0.8));
}

TEST_CASE("wave quantization: 101 tiles need two waves, unless smaller tiles do better") {
  const auto s = dtsim::testing::fixture_scenario();
  // 128 x 12928 -> 1 x 101 tiles: two waves -> q_wave = 101/200 = 0.505 at 128x128.
  // 64x128 tiles (x0.9): 202 tiles, 3 waves -> 202/300 = 0.673 * 0.9 = 0.606;
  // 64x64 (x0.81): 404 tiles, 5 waves -> 0.808 * 0.81 = 0.654: the best candidate.
  const double e = dtsim::compute::gemm_efficiency(GemmShape{128, 12928, 4096, 1}, s.gpu);
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

TEST_CASE("fused attention time counts only the executed fraction") {
  const auto s = dtsim::testing::fixture_scenario();
  const dtsim::compute::ComputeModel model(s.gpu, dtsim::config::Precision::bf16);
  ComputeOp op;
  op.cls = ComputeClass::attention;
  op.flops = 300e9;
  op.executed_fraction = 0.5;
  // 150e9 / (300e12 * 0.5) = 1 ms
  CHECK(model.duration_s(op) == doctest::Approx(1e-3));
}
