// Memory model (parallel/memory_model.hpp) against Megatron's own per-GPU formulas
// (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer Models",
// arXiv 2205.05198, Sec. 4 eqs. 1-2 and Table 2) on GPT-3 175B: h = 12288, a = 96 heads, s = 2048,
// L = 96, b = 1, t = 8.
#include <doctest/doctest.h>

#include <cmath>

#include "parallel/lowering.hpp"
#include "parallel/memory_model.hpp"
#include "scenario_fixture.hpp"

namespace {

dtsim::config::Scenario gpt3(std::int64_t t, std::int64_t p, bool sp, dtsim::config::Recompute r) {
  auto s = dtsim::testing::fixture_scenario();
  auto& m = s.model;
  m.layers = 96;
  m.hidden_size = 12288;
  m.heads = 96;
  m.kv_heads = 96;
  m.ffn_hidden_size = 4 * 12288;
  m.seq_length = 2048;
  m.vocab_size = 51200;
  m.attention = dtsim::config::AttentionKind::standard;
  s.cluster.nodes = t * p / 8;
  s.parallelism.tensor = t;
  s.parallelism.pipeline = p;
  s.parallelism.data = 1;
  s.parallelism.sequence_parallel = sp;
  s.training.activation_recompute = r;
  s.training.global_batch_size = 64;
  s.training.precision = dtsim::config::Precision::fp16;
  return s;
}

constexpr double sbh = 2048.0 * 1 * 12288;

}  // namespace

TEST_CASE("activations per layer, tensor parallel without SP: sbh (10 + 24/t + 5as/(ht)) [eq. 2]") {
  const auto s = gpt3(8, 8, false, dtsim::config::Recompute::none);
  const double expected = sbh * (10 + 24.0 / 8 + 5.0 * 96 * 2048 / (12288.0 * 8));
  CHECK(dtsim::parallel::layer_activation_bytes(s) == doctest::Approx(expected).epsilon(0.10));
  CHECK(dtsim::parallel::layer_activation_bytes(s) == doctest::Approx(expected).epsilon(1e-9));
}

TEST_CASE("activations per layer with SP and selective recompute: 34 sbh / t [Table 2]") {
  const auto s = gpt3(8, 8, true, dtsim::config::Recompute::selective);
  CHECK(dtsim::parallel::layer_activation_bytes(s) == doctest::Approx(34 * sbh / 8).epsilon(1e-9));
}

TEST_CASE("full recompute keeps the layer input: 2 sbh (/t with SP) [Table 2]") {
  CHECK(dtsim::parallel::layer_activation_bytes(gpt3(8, 8, false, dtsim::config::Recompute::full)) ==
        doctest::Approx(2 * sbh));
  CHECK(dtsim::parallel::layer_activation_bytes(gpt3(8, 8, true, dtsim::config::Recompute::full)) ==
        doctest::Approx(2 * sbh / 8));
}

TEST_CASE("first stage under 1F1B holds L layers' worth of activations - states 18 B per parameter") {
  // p = 8 micro-batches in flight x L/p layers = L layers; 34 sbh / t per layer (Megatron's formula,
  // within 10%). Exactly: plus the working set of the layer in backward, whose selective recompute
  // re-creates its scores, 5as^2b / t = sbh * 5as/(ht) = 10 sbh, and the embedding output with its
  // dropout mask on the first stage, sbh (2 + 1) B.
  const auto s = gpt3(8, 8, true, dtsim::config::Recompute::selective);
  const auto e = dtsim::parallel::memory_per_gpu(s);
  const double layer_activations = 96 * 34 * sbh / 8;
  CHECK(e.activations_bytes == doctest::Approx(layer_activations).epsilon(0.10));
  const double working_set = 5.0 * 96 * 2048 / (12288.0 * 8) * sbh;
  CHECK(working_set == doctest::Approx(10 * sbh));
  CHECK(e.activations_bytes == doctest::Approx(layer_activations + working_set + 3 * sbh).epsilon(1e-9));
  // Mixed precision Adam, fp16 gradients: 2 + 2 + 12 = 16 B per parameter held. Stage 0 holds 12 layers
  // (12 l h^2 each, plus biases and norms) and the embedding, split over t = 8.
  const double layer_params = 12 * 12288.0 * 12288 + 13 * 12288.0;
  const double held = (12 * layer_params + 51200.0 * 12288 + 2048.0 * 12288) / 8;
  CHECK(e.weights_bytes + e.gradients_bytes + e.optimizer_bytes == doctest::Approx(16 * held).epsilon(1e-6));
}

TEST_CASE(
    "without master weights a 16-bit run keeps 2 + 2 + 4 B per parameter, and its Adam step moves 14 B") {
  // torch.optim.AdamW on BF16 parameters: BF16 weights, gradients, m and v (TrainingSpec::master_weights
  // false), against Megatron's 2 + 4 + 12 = 18 B in BF16 (FP32 main gradients, master weights, m and v).
  auto s = gpt3(8, 8, true, dtsim::config::Recompute::selective);
  s.training.precision = dtsim::config::Precision::bf16;
  const auto mixed = dtsim::parallel::memory_per_gpu(s);
  s.training.master_weights = false;
  const auto pure = dtsim::parallel::memory_per_gpu(s);
  const double held = mixed.weights_bytes / 2;
  CHECK(mixed.gradients_bytes == doctest::Approx(4 * held));
  CHECK(mixed.optimizer_bytes == doctest::Approx(12 * held));
  CHECK(pure.weights_bytes == doctest::Approx(2 * held));
  CHECK(pure.gradients_bytes == doctest::Approx(2 * held));
  CHECK(pure.optimizer_bytes == doctest::Approx(4 * held));
  CHECK(pure.activations_bytes == mixed.activations_bytes);
  // The step reads the parameter, gradient, m and v and writes the parameter, m and v: 7 x 2 B; SGD
  // reads the parameter and gradient and writes the parameter, 3 x 2 B, and keeps no state.
  CHECK(dtsim::parallel::detail::optimizer_bytes_per_param(s.training) == 14.0);
  s.training.optimizer = dtsim::config::Optimizer::sgd;
  CHECK(dtsim::parallel::detail::optimizer_bytes_per_param(s.training) == 6.0);
  CHECK(dtsim::parallel::parameter_bytes(s.training).optimizer == 0.0);
  // With master weights: 4 x 4 B read and 3 x 4 B written, plus the BF16 copy.
  s.training.master_weights = true;
  s.training.optimizer = dtsim::config::Optimizer::adam;
  CHECK(dtsim::parallel::detail::optimizer_bytes_per_param(s.training) == 30.0);
}

TEST_CASE(
    "a layer's backward holds what its recompute re-creates: the set without recompute minus the kept set") {
  using dtsim::config::Recompute;
  // Full recompute keeps 2 sbh per layer; its backward re-creates sbh (10 + 24/t + 5as/(ht)) (eq. 2).
  const double full_set = sbh * (10 + 24.0 / 8 + 5.0 * 96 * 2048 / (12288.0 * 8));
  CHECK(dtsim::parallel::layer_working_set_bytes(gpt3(8, 8, false, Recompute::full)) ==
        doctest::Approx(full_set - 2 * sbh).epsilon(1e-9));
  // Nothing recomputed, nothing re-created.
  CHECK(dtsim::parallel::layer_working_set_bytes(gpt3(8, 8, false, Recompute::none)) == 0.0);
  // Flash attention keeps no scores, so its selective recompute re-creates none either.
  auto flash = gpt3(8, 8, true, Recompute::selective);
  flash.model.attention = dtsim::config::AttentionKind::flash;
  CHECK(dtsim::parallel::layer_working_set_bytes(flash) == 0.0);
  // One layer's working set on top of the kept activations: 1F1B stage 0 keeps L = 96 layers' inputs
  // (2 sbh each) and the embedding output and mask (3 sbh).
  const auto e = dtsim::parallel::memory_per_gpu(gpt3(8, 8, false, Recompute::full));
  CHECK(e.activations_bytes == doctest::Approx(96 * 2 * sbh + (full_set - 2 * sbh) + 3 * sbh).epsilon(1e-9));
}

TEST_CASE("eager kernels keep each RMSNorm's FP32 input, K and V repeated, the attention output twice") {
  // Llama-style, t = 1, no recompute: per layer 2 norms x 4 B x sbh more, plus (2 (heads - kv) + heads)
  // s b d x 2 B for the repeated K and V and the output's layout copy (elementwise.hpp).
  auto s = gpt3(1, 1, false, dtsim::config::Recompute::none);
  s.model.mlp = dtsim::config::MlpKind::swiglu;
  s.model.attention = dtsim::config::AttentionKind::flash;
  s.model.kv_heads = 8;
  const double fused = dtsim::parallel::layer_activation_bytes(s);
  s.model.elementwise_kernels = dtsim::config::ElementwiseKernels::eager;
  const double eager = dtsim::parallel::layer_activation_bytes(s);
  const double d = 12288.0 / 96;
  CHECK(eager - fused == doctest::Approx(2 * 4 * sbh + (2 * (96 - 8) + 96) * 2048.0 * d * 2));
  // Full recompute keeps only the layer input either way; the working set of the layer in backward
  // grows by the same amount.
  s.training.activation_recompute = dtsim::config::Recompute::full;
  CHECK(dtsim::parallel::layer_activation_bytes(s) == doctest::Approx(2 * sbh));
}

TEST_CASE("175B without model parallelism does not fit in 80 GB") {
  auto s = gpt3(1, 1, false, dtsim::config::Recompute::full);
  s.cluster.nodes = 1;
  s.parallelism.data = 8;
  const auto e = dtsim::parallel::memory_per_gpu(s);
  // 175e9 parameters x 16 B = 2.8 TB, far over 80e9.
  CHECK(e.total_bytes() > 2.5e12);
}

TEST_CASE("tokens of a micro-batch past 2^63 are costed in doubles, not wrapped") {
  // micro-batch 2^40 x seq_length 2^30 = 2^70 tokens (an int64 product wrapped to 0 before). With one
  // pipeline stage, first and last: the buffers are 2 buckets + 1 GiB + the FP32 logits,
  // 2^70 tokens x vocab 51200 / t 1 x 4 bytes.
  auto s = dtsim::testing::fixture_scenario();
  s.training.micro_batch_size = std::int64_t{1} << 40;
  s.model.seq_length = std::int64_t{1} << 30;
  s.training.global_batch_size = s.parallelism.data * s.training.micro_batch_size;
  const auto e = dtsim::parallel::memory_per_gpu(s);
  const double logits = std::ldexp(1.0, 70) * 51200 * 4;
  CHECK(e.buffers_bytes == doctest::Approx(2 * s.training.bucket_bytes + 1073741824.0 + logits));
  CHECK(e.total_bytes() > s.gpu.hbm_bytes);
}

TEST_CASE("every stage is estimated: a middle stage with a layer more can hold the most (1F1B)") {
  // Llama 3 405B's split (126 layers on 16 stages): 7 layers on the ends, 8 in between. Under 1F1B stage
  // s keeps min(m, p - s) micro-batches: stage 0 7 x 16 = 112 layer activations, stage 1 8 x 15 = 120.
  auto s = gpt3(8, 16, true, dtsim::config::Recompute::selective);
  s.model.layers = 126;
  s.cluster.nodes = 16;
  const auto e = dtsim::parallel::memory_per_gpu(s);
  const double per_layer = dtsim::parallel::layer_activation_bytes(s);
  const double working_set = dtsim::parallel::layer_working_set_bytes(s);
  // Stage 1 has no embedding: its activations are 120 layers' and one layer's working set.
  CHECK(e.activations_bytes == doctest::Approx(120 * per_layer + working_set).epsilon(1e-9));
}
