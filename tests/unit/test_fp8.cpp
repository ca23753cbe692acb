// FP8 as Transformer Engine runs it (models/transformer/linear.hpp, compute/compute_model.hpp): only the
// linear layers' GEMMs at the FP8 rate, everything else at BF16's, and the casts around those GEMMs.
#include <doctest/doctest.h>

#include <string_view>

#include "compute/compute_model.hpp"
#include "models/transformer/transformer.hpp"
#include "scenario_fixture.hpp"

using dtsim::graph::ComputeClass;
using dtsim::graph::ComputeOp;
using dtsim::graph::GemmShape;

namespace {

ComputeOp full_wave_gemm(bool linear_layer) {
  ComputeOp op;
  op.cls = ComputeClass::gemm;
  op.gemm = GemmShape{1280, 1280, 4096, 1};  // 100 tiles on 100 SMs: efficiency 0.8 on the fixture
  op.flops = 2.0 * 1280 * 1280 * 4096;
  op.linear_layer = linear_layer;
  return op;
}

double bytes_named(const std::vector<dtsim::models::LayerOp>& ops, std::string_view part) {
  double sum = 0;
  for (const auto& op : ops) {
    if (op.name.find(part) != std::string_view::npos) sum += op.compute.bytes;
  }
  return sum;
}

// Two layers of hidden 1024 (16 heads), FFN 4096, 2,048 tokens: the layer the cast tests count bytes of.
dtsim::config::TransformerSpec fp8_test_model() {
  dtsim::config::TransformerSpec m;
  m.layers = 2;
  m.hidden_size = 1024;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden_size = 4096;
  m.vocab_size = 32000;
  m.seq_length = 2048;
  return m;
}

}  // namespace

TEST_CASE("an FP8 run: linear layers' GEMMs at the FP8 peak, other GEMMs and attention at BF16's") {
  auto s = dtsim::testing::fixture_scenario();
  s.gpu.peak_tflops[static_cast<int>(dtsim::config::Precision::fp8)] = 600.0;  // bf16: 300
  const dtsim::compute::ComputeModel fp8(s.gpu, dtsim::config::Precision::fp8);
  const dtsim::compute::ComputeModel bf16(s.gpu, dtsim::config::Precision::bf16);
  // One curve for both precisions on the fixture (efficiency 0.8): t = flops / (peak x 0.8).
  const double flops = full_wave_gemm(true).flops;
  CHECK(fp8.duration_s(full_wave_gemm(true)) == doctest::Approx(flops / (600e12 * 0.8)));
  CHECK(fp8.duration_s(full_wave_gemm(false)) == doctest::Approx(flops / (300e12 * 0.8)));
  CHECK(bf16.duration_s(full_wave_gemm(true)) == doctest::Approx(flops / (300e12 * 0.8)));
  ComputeOp attention = full_wave_gemm(false);
  attention.cls = ComputeClass::attention;
  CHECK(fp8.duration_s(attention) == doctest::Approx(bf16.duration_s(attention)));
  CHECK(fp8.peak_flops_per_s() == doctest::Approx(600e12));  // MFU's peak: the run's precision
}

TEST_CASE("an FP8 layer casts the linear layers' inputs and output gradients (linear.hpp)") {
  const dtsim::config::TransformerSpec m = fp8_test_model();
  dtsim::models::ShardConfig shard;
  shard.micro_batch = 1;
  shard.precision = dtsim::config::Precision::fp8;
  const auto fp8 = dtsim::models::transformer_layer(m, shard);
  shard.precision = dtsim::config::Precision::bf16;
  const auto bf16 = dtsim::models::transformer_layer(m, shard);
  // Tokens T = 2048, h = 1024, f = 4096, QKV width 3h. Forward: the attention output's input (T h) and
  // the down projection's (T f) cast with their transposes, 4 bytes per element; the QKV and up
  // projections' inputs come out of their norms in FP8.
  const double T = 2048, h = 1024, f = 4096;
  CHECK(bytes_named(fp8.forward, "fp8_cast") == doctest::Approx(4 * T * h + 4 * T * f));
  // Backward: each output gradient cast with its transpose (4 bytes per element: T h twice, T f, T 3h),
  // and the two norm-fused inputs transposed (2 bytes per element, T h each).
  CHECK(bytes_named(fp8.backward, "grad_fp8_cast") == doctest::Approx(4 * T * (h + h + f + 3 * h)));
  CHECK(bytes_named(fp8.backward, "fp8_transpose") == doctest::Approx(2 * T * (h + h)));
  CHECK(bytes_named(bf16.forward, "fp8") == 0.0);
  CHECK(bytes_named(bf16.backward, "fp8") == 0.0);
  // The twelve linear-layer GEMMs (4 forward, 8 backward) and no other are marked.
  int linear = 0;
  for (const auto* ops : {&fp8.forward, &fp8.backward}) {
    for (const auto& op : *ops) linear += op.compute.linear_layer ? 1 : 0;
  }
  CHECK(linear == 12);
}

TEST_CASE("tensorwise FP8 scaling: an amax and a fused cast-transpose per operand, weights included (linear.hpp)") {
  const dtsim::config::TransformerSpec m = fp8_test_model();
  dtsim::models::ShardConfig shard;
  shard.micro_batch = 1;
  shard.precision = dtsim::config::Precision::fp8;
  shard.fp8_recipe = dtsim::config::Fp8Recipe::tensorwise;
  const auto layer = dtsim::models::transformer_layer(m, shard);
  // Tokens T = 2048, h = 1024, f = 4096, QKV width 3h. Forward operands: the four inputs (T h for QKV,
  // the attention output and the up projection; T f for the down projection) and the four weights
  // (h 3h, h h, h f, f h). Each is read once by its amax (2 bytes per element) and cast with its
  // transpose (4 bytes per element); no norm writes FP8, so no transpose waits for the backward pass.
  const double T = 2048, h = 1024, f = 4096;
  const double inputs = T * h + T * h + T * h + T * f;
  const double weights = h * 3 * h + h * h + h * f + f * h;
  CHECK(bytes_named(layer.forward, "fp8_cast") == doctest::Approx(4 * (inputs + weights)));
  CHECK(bytes_named(layer.forward, "fp8_amax") == doctest::Approx(2 * (inputs + weights)));
  // Backward: the output gradients (T h twice, T f, T 3h), an amax and a cast each.
  const double grads = T * (h + h + f + 3 * h);
  CHECK(bytes_named(layer.backward, "grad_fp8_cast") == doctest::Approx(4 * grads));
  CHECK(bytes_named(layer.backward, "grad_fp8_amax") == doctest::Approx(2 * grads));
  CHECK(bytes_named(layer.backward, "fp8_transpose") == 0.0);
  // The casts are labelled with the memory classes the GPU profile rates (core/memory_class.hpp).
  for (const auto& op : layer.forward) {
    if (op.name.ends_with("fp8_amax")) CHECK(op.compute.memory == dtsim::core::MemoryClass::amax);
    if (op.name.ends_with("fp8_cast")) CHECK(op.compute.memory == dtsim::core::MemoryClass::fp8_cast_transpose);
  }
}
