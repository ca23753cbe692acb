// Transformer cost declarations against the equations in models/transformer/transformer.hpp.
#include <doctest/doctest.h>

#include <array>
#include <cmath>
#include <limits>
#include <string_view>

#include "config/scenario_loader.hpp"
#include "models/transformer/transformer.hpp"

namespace {

using dtsim::config::TransformerSpec;
using dtsim::models::LayerOp;

TransformerSpec gpt(std::int64_t layers, std::int64_t h, std::int64_t heads, std::int64_t s,
                    std::int64_t vocab) {
  TransformerSpec m;
  m.layers = layers;
  m.hidden_size = h;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden_size = 4 * h;
  m.vocab_size = vocab;
  m.seq_length = s;
  m.attention = dtsim::config::AttentionKind::standard;
  return m;
}

double flops(const std::vector<LayerOp>& ops) {
  double sum = 0;
  for (const auto& op : ops) sum += op.compute.flops;
  return sum;
}

// HBM bytes of the memory-bound ops, and kernel launches of the compute ops.
double bytes(const std::vector<LayerOp>& ops) {
  double sum = 0;
  for (const auto& op : ops)
    if (op.compute.cls == dtsim::graph::ComputeClass::memory) sum += op.compute.bytes;
  return sum;
}

int kernels(const std::vector<LayerOp>& ops) {
  int sum = 0;
  for (const auto& op : ops)
    if (op.role == dtsim::models::CommRole::none) sum += op.compute.kernels;
  return sum;
}

}  // namespace

TEST_CASE("layer forward FLOPs are 24 b s h^2 + 4 b s^2 h (Narayanan et al. SC'21)") {
  const auto m = gpt(24, 2048, 16, 2048, 51200);
  dtsim::models::ShardConfig shard;
  shard.micro_batch = 2;
  const auto p = dtsim::models::transformer_layer(m, shard);
  // b=2, s=2048, h=2048: 24*2*2048*2048^2 + 4*2*2048^2*2048 = 412316860416 + 68719476736
  const double expected = 24.0 * 2 * 2048 * 2048.0 * 2048 + 4.0 * 2 * 2048.0 * 2048 * 2048;
  CHECK(flops(p.forward) == doctest::Approx(expected));
  // Backward is twice the forward (data and weight gradients of every matmul).
  CHECK(flops(p.backward) == doctest::Approx(2 * expected));
}

TEST_CASE("tensor parallelism splits the FLOPs and adds one all-reduce per block each way") {
  const auto m = gpt(24, 2048, 16, 2048, 51200);
  dtsim::models::ShardConfig one;
  dtsim::models::ShardConfig four;
  four.tensor = 4;
  const auto p1 = dtsim::models::transformer_layer(m, one);
  const auto p4 = dtsim::models::transformer_layer(m, four);
  CHECK(flops(p4.forward) == doctest::Approx(flops(p1.forward) / 4));
  int forward_reduces = 0;
  for (const auto& op : p4.forward) forward_reduces += op.role == dtsim::models::CommRole::tensor_all_reduce;
  int backward_reduces = 0;
  for (const auto& op : p4.backward)
    backward_reduces += op.role == dtsim::models::CommRole::tensor_all_reduce;
  CHECK(forward_reduces == 2);
  CHECK(backward_reduces == 2);
  // Each all-reduce carries the micro-batch's activations: b s h x 2 bytes = 1*2048*2048*2.
  for (const auto& op : p4.forward) {
    if (op.role == dtsim::models::CommRole::tensor_all_reduce)
      CHECK(op.comm_bytes == doctest::Approx(2048.0 * 2048 * 2));
  }
}

TEST_CASE("sequence parallelism replaces each all-reduce by an all-gather and a reduce-scatter") {
  const auto m = gpt(24, 2048, 16, 2048, 51200);
  dtsim::models::ShardConfig sp;
  sp.tensor = 4;
  sp.sequence_parallel = true;
  const auto p = dtsim::models::transformer_layer(m, sp);
  int gathers = 0, scatters = 0, reduces = 0;
  for (const auto& op : p.forward) {
    gathers += op.role == dtsim::models::CommRole::tensor_all_gather;
    scatters += op.role == dtsim::models::CommRole::tensor_reduce_scatter;
    reduces += op.role == dtsim::models::CommRole::tensor_all_reduce;
  }
  CHECK(gathers == 2);
  CHECK(scatters == 2);
  CHECK(reduces == 0);
}

TEST_CASE("a column-parallel backward re-gathers its input and reduces its data gradient beside the GEMMs") {
  // Megatron-LM's LinearWithGradAccumulationAndAsyncCommunication.backward: with sequence parallelism
  // the sharded input is all-gathered beside the data-gradient GEMM (the weight gradient needs it) and
  // the data gradient reduce-scattered beside the weight-gradient GEMM; both carry b s h x 2 bytes.
  using dtsim::models::CommRole;
  using dtsim::models::GemmOverlap;
  const auto m = gpt(24, 2048, 16, 2048, 51200);
  dtsim::models::ShardConfig sp;
  sp.tensor = 4;
  sp.sequence_parallel = true;
  const auto bw = dtsim::models::transformer_layer(m, sp).backward;
  const auto at = [&](std::string_view name) {
    for (std::size_t i = 0; i < bw.size(); ++i)
      if (bw[i].name == name) return i;
    FAIL("no op " << name);
    return bw.size();
  };
  for (const auto& names :
       {std::array<std::string_view, 4>{"mlp_input_regather", "mlp_up_dgrad", "mlp_grad_tp_reduce",
                                        "mlp_up_wgrad"},
        std::array<std::string_view, 4>{"attention_input_regather", "qkv_projection_dgrad",
                                        "attention_grad_tp_reduce", "qkv_projection_wgrad"}}) {
    // Named copies, not structured bindings: CAPTURE's lambda may not capture those before clang 16.
    const std::string_view regather = names[0], dgrad = names[1], reduce = names[2], wgrad = names[3];
    CAPTURE(regather);
    const std::size_t g = at(regather);
    CHECK(at(dgrad) == g + 1);
    CHECK(at(reduce) == g + 2);
    CHECK(at(wgrad) == g + 3);
    CHECK(bw[g].role == CommRole::tensor_all_gather);
    CHECK(bw[g].overlap == GemmOverlap::beside_next);
    CHECK(bw[g + 2].role == CommRole::tensor_reduce_scatter);
    CHECK(bw[g + 2].overlap == GemmOverlap::beside_next);
    CHECK(bw[g].comm_bytes == doctest::Approx(2048.0 * 2048 * 2));
  }
  // Two gradient all-gathers for the row-parallel GEMMs and two input re-gathers; two reduce-scatters.
  int gathers = 0, scatters = 0;
  for (const auto& op : bw) {
    gathers += op.role == CommRole::tensor_all_gather;
    scatters += op.role == CommRole::tensor_reduce_scatter;
  }
  CHECK(gathers == 4);
  CHECK(scatters == 2);

  // Blocking (Megatron-LM of early 2021, no sequence parallelism): both GEMMs, then the all-reduce.
  dtsim::models::ShardConfig blocking;
  blocking.tensor = 4;
  blocking.backward_overlap = false;
  const auto old = dtsim::models::transformer_layer(m, blocking).backward;
  int found = 0;
  for (std::size_t i = 0; i < old.size(); ++i) {
    if (old[i].name != "mlp_up_wgrad") continue;
    ++found;
    CHECK(old[i - 1].name == "mlp_up_dgrad");
    REQUIRE(i + 1 < old.size());
    CHECK(old[i + 1].role == CommRole::tensor_all_reduce);
    CHECK(old[i + 1].overlap == GemmOverlap::none);
  }
  CHECK(found == 1);
}

TEST_CASE("eager elementwise kernels: the extra HBM passes of elementwise.hpp, per layer") {
  // Llama-style layer, b = 1, s = 4096, h = 4096, 32 heads of d = 128, 8 KV heads, f = 14336, 16-bit
  // (a = 2). E = s h, F = s f, R = s (heads + kv) d the rotated Q and K elements. Eager minus fused:
  //   forward  norms 2 ((24 + 4a) - 2a) E = 56 E, rotary (16 + 2a - 2a) R = 16 R, repeat_kv 2a R = 4 R,
  //            output layout 2a E = 4 E, swiglu (5a - 3a) F = 4 F, residuals 2 (3a - (3a + 1)) E = -2 E
  //            = 58 E + 20 R + 4 F, in 14 + 5 + 2 + 1 + 1 = 23 more kernels;
  //   backward residuals 2 (3a - (2a + 1)) E = 2 E, layout 4 E, repeat_kv 4 R, rotary 16 R,
  //            swiglu (9a - 5a) F = 8 F, up-projection gradient sum 3a E = 6 E,
  //            norms 2 ((8a + 68) - 3a) E = 156 E  = 168 E + 20 R + 8 F.
  TransformerSpec m = gpt(32, 4096, 32, 4096, 128256);
  m.kv_heads = 8;
  m.ffn_hidden_size = 14336;
  m.mlp = dtsim::config::MlpKind::swiglu;
  m.attention = dtsim::config::AttentionKind::flash;
  dtsim::models::ShardConfig one;
  const auto fused = dtsim::models::transformer_layer(m, one);
  m.elementwise_kernels = dtsim::config::ElementwiseKernels::eager;
  const auto eager = dtsim::models::transformer_layer(m, one);
  const double E = 4096.0 * 4096, F = 4096.0 * 14336, R = 4096.0 * (32 + 8) * 128;
  CHECK(bytes(eager.forward) - bytes(fused.forward) == doctest::Approx(58 * E + 20 * R + 4 * F));
  CHECK(bytes(eager.backward) - bytes(fused.backward) == doctest::Approx(168 * E + 20 * R + 8 * F));
  CHECK(kernels(eager.forward) - kernels(fused.forward) == 23);
  // The GEMMs and the attention kernel are the same.
  CHECK(flops(eager.forward) == doctest::Approx(flops(fused.forward)));
  CHECK(flops(eager.backward) == doctest::Approx(flops(fused.backward)));
}

TEST_CASE("Megatron-LM of 2020-2022's scripted kernels: bias, gradient and layout kernels beside the fused") {
  // GPT-style layer (LayerNorm, GELU, biases, standard attention), h = 2048, b s = 2048 tokens, a = 2,
  // tensor parallel 1: E = T h residual elements, F = 4 E MLP elements, the QKV output 3 E.
  // Forward (models/transformer/elementwise.hpp, "scripted"): the QKV bias added after the GEMM, 2a 3E,
  // and the context's permute copy, 2a E: 2 kernels, 8a E = 16 E.
  // Backward: bias gradients of the four linears a (E + F + E + 3E) = 9a E; apex LayerNorm's three
  // kernels on the same 3a E as the fused kernel's (its rate, norm_backward, is measured on those bytes);
  // autograd's two residual-gradient sums 2 x 3a E; the permute copy back 2a E; baddbmm's two alpha
  // scalings 2 x 2a E; the QKV split joined 2a 3E: 9 + 6 + 2 + 4 + 6 = 27a E = 54 E, in
  // 4 + 2 x 2 + 2 + 1 + 2 + 1 = 14 more kernels: 15 forward and 33 backward in all.
  const auto m = gpt(24, 2048, 16, 2048, 51200);
  dtsim::models::ShardConfig one;
  const auto fused = dtsim::models::transformer_layer(m, one);
  auto scripted_model = m;
  scripted_model.elementwise_kernels = dtsim::config::ElementwiseKernels::scripted;
  const auto scripted = dtsim::models::transformer_layer(scripted_model, one);
  const double E = 2048.0 * 2048;
  CHECK(bytes(scripted.forward) - bytes(fused.forward) == doctest::Approx(16 * E));
  CHECK(bytes(scripted.backward) - bytes(fused.backward) == doctest::Approx(54 * E));
  CHECK(kernels(scripted.forward) == 15);
  CHECK(kernels(scripted.backward) == 33);
  CHECK(kernels(scripted.forward) - kernels(fused.forward) == 2);
  CHECK(kernels(scripted.backward) - kernels(fused.backward) == 14);
  CHECK(flops(scripted.backward) == doctest::Approx(flops(fused.backward)));
}

TEST_CASE("gradient accumulation kernels: one add per parameter tensor outside the fused weight GEMMs") {
  // models/transformer/transformer.hpp: per micro-batch, (4 + a + 4) bytes per element of every tensor
  // added into its FP32 main gradient. GPT-style, h = 1024, tensor parallel 1: fused adds the two
  // LayerNorms' weights and biases (4h) and the four biases (3h + h + 4h + h): 8 kernels over 13h
  // elements; unfused adds the four weights too (12 h^2): 12 kernels over all the layer's parameters.
  // Llama-style (RMSNorm, no biases), fused: the two norm weights, 2 kernels over 2h.
  auto m = gpt(24, 1024, 16, 1024, 51200);
  const auto accumulation = [](const dtsim::models::LayerProgram& p) {
    for (const auto& op : p.backward)
      if (op.name == "grad_accumulation") return op.compute;
    dtsim::graph::ComputeOp none;
    none.kernels = 0;
    return none;
  };
  const double h = 1024, per_element = 4 + 2 + 4;
  dtsim::models::ShardConfig sh;
  sh.grad_accumulation = dtsim::config::GradAccumulation::none;
  CHECK(accumulation(dtsim::models::transformer_layer(m, sh)).kernels == 0);
  sh.grad_accumulation = dtsim::config::GradAccumulation::fused;
  const auto fused = accumulation(dtsim::models::transformer_layer(m, sh));
  CHECK(fused.kernels == 8);
  CHECK(fused.bytes == doctest::Approx(per_element * 13 * h));
  sh.grad_accumulation = dtsim::config::GradAccumulation::unfused;
  const auto unfused = accumulation(dtsim::models::transformer_layer(m, sh));
  CHECK(unfused.kernels == 12);
  CHECK(unfused.bytes == doctest::Approx(per_element * dtsim::models::parameters_per_layer(m)));
  m.mlp = dtsim::config::MlpKind::swiglu;
  sh.grad_accumulation = dtsim::config::GradAccumulation::fused;
  const auto llama = accumulation(dtsim::models::transformer_layer(m, sh));
  CHECK(llama.kernels == 2);
  CHECK(llama.bytes == doctest::Approx(per_element * 2 * h));
}

TEST_CASE("parameter count matches Megatron's 12 l h^2 (1 + 13/(12h) + (V+s)/(12 l h))") {
  const auto m = gpt(96, 12288, 96, 2048, 51200);
  const double l = 96, h = 12288, V = 51200, s = 2048;
  // Megatron (Narayanan et al. SC'21, Sec. 5.1) counts tied embeddings once: output layer shares them.
  auto tied = m;
  tied.tied_embeddings = true;
  const double expected = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
  CHECK(dtsim::models::total_parameters(tied) == doctest::Approx(expected).epsilon(1e-6));
}

TEST_CASE("model FLOPs per iteration: 72 B s l h^2 (1 + s/(6h)) + 6 B s h V") {
  const auto m = gpt(96, 12288, 96, 2048, 51200);
  const double B = 1536, s = 2048, l = 96, h = 12288, V = 51200;
  // SC'21 eq. 3 counts 96 B s l h^2 (1 + s/(6h) + V/(16 l h)): the layers 4 times (with the recompute
  // pass), the logits 3 times (6 B s h V). Without recompute the layers count 3 times.
  const double expected = 72 * B * s * l * h * h * (1 + s / (6 * h)) + 6 * B * s * h * V;
  CHECK(dtsim::models::model_flops_per_iteration(m, 1536) == doctest::Approx(expected).epsilon(1e-9));
}

TEST_CASE("grouped-query attention shrinks the QKV projection") {
  auto m = gpt(32, 4096, 32, 4096, 32000);
  m.kv_heads = 8;
  dtsim::models::ShardConfig shard;
  const auto p = dtsim::models::transformer_layer(m, shard);
  // QKV output width h + 2 kv d = 4096 + 2*8*128 = 6144; FLOPs 2 * tokens * 6144 * 4096.
  for (const auto& op : p.forward) {
    if (op.name == "qkv_projection") CHECK(op.compute.flops == doctest::Approx(2.0 * 4096 * 6144 * 4096));
  }
}

TEST_CASE("a stated head_dim sets the attention's width apart from the hidden size") {
  // Qwen3-32B's shape: h = 5120, 64 query heads and 8 KV heads of d = 128 (w = 64 x 128 = 8192 != h),
  // SwiGLU f = 25600, s = 4096. QKV projects h to (64 + 2 x 8) x 128 = 10240; the output projection
  // w = 8192 back to h.
  auto m = gpt(64, 5120, 64, 4096, 151936);
  m.kv_heads = 8;
  m.head_dim = 128;
  m.ffn_hidden_size = 25600;
  m.mlp = dtsim::config::MlpKind::swiglu;
  m.attention = dtsim::config::AttentionKind::flash;
  const double h = 5120, w = 8192, qkv = 10240, f = 25600, s = 4096, V = 151936, l = 64;
  // Per layer: RMSNorm weights 2h, QKV h x qkv, output w x h, MLP 3 h f (no biases in SwiGLU layers).
  CHECK(dtsim::models::parameters_per_layer(m) == doctest::Approx(2 * h + h * qkv + w * h + 3 * h * f));
  // Model FLOPs per token and layer 2h qkv + 2wh + 2 x 3 h f + 4 s w; logits 2hV; x3 for backward.
  const double per_token = l * (2 * h * qkv + 2 * w * h + 6 * h * f + 4 * s * w) + 2 * h * V;
  CHECK(dtsim::models::model_flops_per_iteration(m, 8) == doctest::Approx(3 * per_token * s * 8).epsilon(1e-12));
  dtsim::models::ShardConfig shard;
  const auto p = dtsim::models::transformer_layer(m, shard);
  int seen = 0;
  for (const auto& op : p.forward) {
    if (op.name == "qkv_projection") {
      CHECK(op.compute.flops == doctest::Approx(2.0 * s * qkv * h));
      ++seen;
    }
    if (op.name == "attention_projection") {
      CHECK(op.compute.flops == doctest::Approx(2.0 * s * h * w));
      ++seen;
    }
  }
  CHECK(seen == 2);
  // Without head_dim the same model has d = h / heads = 80: the widths shrink to h.
  m.head_dim = 0;
  CHECK(m.attention_width() == doctest::Approx(h));
  CHECK(dtsim::models::parameters_per_layer(m) == doctest::Approx(2 * h + h * (h + 2 * 8 * 80) + h * h + 3 * h * f));
}

TEST_CASE("the loss is Megatron's unfused vocabulary-parallel cross-entropy, pass by pass") {
  // Per logit element (tokens x V/t of them), bytes read + written by the head's memory-bound kernels
  // (transformer.cpp, cross_entropy()): forward cast a + 4, max 4, shift 8, exp 8, sum 4, normalize 8
  // = a + 36; backward scale 8 and cast back 4 + a = 12 + a. The final norm adds 2 h a per token
  // forward and 3 h a backward.
  const auto m = gpt(24, 2048, 16, 2048, 51200);
  const auto memory_bytes = [](const std::vector<LayerOp>& ops) {
    double sum = 0;
    for (const auto& op : ops) {
      if (op.role == dtsim::models::CommRole::none && op.compute.cls == dtsim::graph::ComputeClass::memory)
        sum += op.compute.bytes;
    }
    return sum;
  };
  const auto reduces = [](const std::vector<LayerOp>& ops) {
    int n = 0;
    for (const auto& op : ops) {
      if (op.role == dtsim::models::CommRole::tensor_all_reduce) {
        ++n;
        CHECK(op.comm_bytes == doctest::Approx(2048.0 * 4));  // one FP32 value per token
      }
    }
    return n;
  };
  const double tokens = 2048, h = 2048;

  dtsim::models::ShardConfig bf16;  // a = 2, one rank
  const auto p = dtsim::models::head_layer(m, bf16);
  const double logits = tokens * 51200;
  CHECK(memory_bytes(p.forward) == doctest::Approx(logits * (2 + 36) + 2 * tokens * h * 2));
  CHECK(memory_bytes(p.backward) == doctest::Approx(logits * (12 + 2) + 3 * tokens * h * 2));
  CHECK(reduces(p.forward) == 0);

  // a = 4: the logits are FP32 already, no cast either way: forward 32, backward 8.
  dtsim::models::ShardConfig fp32;
  fp32.precision = dtsim::config::Precision::fp32;
  const auto q = dtsim::models::head_layer(m, fp32);
  CHECK(memory_bytes(q.forward) == doctest::Approx(logits * 32 + 2 * tokens * h * 4));
  CHECK(memory_bytes(q.backward) == doctest::Approx(logits * 8 + 3 * tokens * h * 4));

  dtsim::models::ShardConfig four;  // t = 4: a quarter of the vocabulary; max, target and sum all-reduced
  four.tensor = 4;
  const auto r = dtsim::models::head_layer(m, four);
  CHECK(memory_bytes(r.forward) == doctest::Approx(logits / 4 * (2 + 36) + 2 * tokens * h * 2));
  CHECK(reduces(r.forward) == 3);
}

TEST_CASE("GEMM dimensions past 2^63 saturate instead of wrapping") {
  // micro-batch 2^40 x seq_length 2^30: 2^70 tokens, the m of the QKV projection: clamped to
  // 2^63 - 1. FLOPs stay in doubles: 2 x 2^70 x n x k.
  const auto m = gpt(1, 2048, 16, std::int64_t{1} << 30, 51200);
  dtsim::models::ShardConfig shard;
  shard.micro_batch = std::int64_t{1} << 40;
  const auto p = dtsim::models::transformer_layer(m, shard);
  bool found = false;
  for (const LayerOp& op : p.forward) {
    if (op.name != "qkv_projection") continue;
    found = true;
    CHECK(op.compute.gemm.m == std::numeric_limits<std::int64_t>::max());
    CHECK(op.compute.gemm.n == 3 * 2048);
    CHECK(op.compute.flops == doctest::Approx(2 * std::ldexp(1.0, 70) * 3 * 2048 * 2048));
  }
  CHECK(found);
}

TEST_CASE("the logits are computed over the vocabulary padded as the stack pads it") {
  // 50,257 words: Megatron's padding to a multiple of 128 x tp gives 50,304 at tp 1 (393 x 128) and
  // 50,688 at tp 4 (99 x 512), 12,672 per rank; unpadded, 50,257 (12,564.25 per rank at tp 4, the
  // GEMM's n rounded up to the largest shard, 12,565).
  auto m = gpt(24, 2048, 16, 2048, 50257);
  const auto logits_n = [&](std::int64_t tp) {
    dtsim::models::ShardConfig shard;
    shard.tensor = tp;
    for (const auto& op : dtsim::models::head_layer(m, shard).forward) {
      if (op.name == "logits") return op.compute.gemm.n;
    }
    return std::int64_t{0};
  };
  CHECK(logits_n(1) == 50304);
  CHECK(logits_n(4) == 12672);
  m.vocab_padding = 1;
  CHECK(logits_n(1) == 50257);
  CHECK(logits_n(4) == 12565);
}

TEST_CASE("Hugging Face's eager GELU and autocast with FP32 parameters: the kernels they add to a GPT layer") {
  // GPT-style layer (LayerNorm, GELU, biases, one fused QKV and one MLP-up projection), h = 2048,
  // b s = 2048 tokens, a = 2, tensor parallel 1: E = T h, F = 4E, W = 3h^2 + h^2 + 4h^2 + 4h^2 = 12 h^2.
  // hf_eager over eager (models/transformer/elementwise.hpp): NewGELU forward 18aF in 8 kernels instead
  // of 2aF in 1: 16aF = 128E more, 7 kernels; backward 28aF in 11 instead of 3aF in 1: 25aF = 200E, 10.
  // Autocast over hf_eager (models/transformer/autocast.hpp), forward: weight casts (4 + a)W = 72h^2 in 4
  // kernels; the two projections' input casts 2 (4 + a)E = 12E in 2; two LayerNorms on the FP32 stream
  // 2 x 2 x 4E instead of 2 x 2 x 2E: 8E; two residual additions (3a + 9)E instead of (5a + 1)E: 8E;
  // 72h^2 + 28E in 6 more kernels. Backward: weight-gradient casts 72h^2 in 4; input-gradient casts
  // 2 (a + 4)E = 12E in 2; norms 2 x 3 x 4E instead of 2 x 3 x 2E: 12E; residuals (3a + 17)E instead
  // of (5a + 1)E, one kernel more each: 24E; 72h^2 + 48E in 8 more kernels.
  auto m = gpt(24, 2048, 16, 2048, 51200);
  m.attention = dtsim::config::AttentionKind::flash;
  m.elementwise_kernels = dtsim::config::ElementwiseKernels::eager;
  dtsim::models::ShardConfig one;
  const auto eager = dtsim::models::transformer_layer(m, one);
  m.elementwise_kernels = dtsim::config::ElementwiseKernels::hf_eager;
  const auto hf = dtsim::models::transformer_layer(m, one);
  one.autocast = true;
  const auto casts = dtsim::models::transformer_layer(m, one);
  const double E = 2048.0 * 2048;
  const double h2 = 2048.0 * 2048;
  CHECK(bytes(hf.forward) - bytes(eager.forward) == doctest::Approx(128 * E));
  CHECK(bytes(hf.backward) - bytes(eager.backward) == doctest::Approx(200 * E));
  CHECK(kernels(hf.forward) - kernels(eager.forward) == 7);
  CHECK(kernels(hf.backward) - kernels(eager.backward) == 10);
  CHECK(bytes(casts.forward) - bytes(hf.forward) == doctest::Approx(72 * h2 + 28 * E));
  CHECK(bytes(casts.backward) - bytes(hf.backward) == doctest::Approx(72 * h2 + 48 * E));
  CHECK(kernels(casts.forward) - kernels(hf.forward) == 6);
  CHECK(kernels(casts.backward) - kernels(hf.backward) == 8);
  CHECK(flops(casts.forward) == doctest::Approx(flops(hf.forward)));
}

TEST_CASE("the qwen3-32b preset has the report's 32.8 B parameters") {
  // Per layer 2h + h (w + 2 kv d) + w h + 3 h f = 10,240 + 52,428,800 + 41,943,040 + 393,216,000 =
  // 487,598,080; x 64 layers = 31,206,277,120; untied embedding and output 2 x 151,936 x 5,120 and the
  // final norm 5,120: 32,762,106,880 (Yang et al. 2025, Table 1: 32.8 B).
  const auto s = dtsim::config::load_scenario_text(
      R"({"schema_version": 1, "name": "q", "model": {"preset": "qwen3-32b"},
          "cluster": {"node": "dgx-h100", "nodes": 1}, "training": {"global_batch_size": 8}})",
      "q", dtsim::config::default_data_paths());
  CHECK(s.model.head_dim == 128);
  CHECK(dtsim::models::total_parameters(s.model) == doctest::Approx(32762106880.0).epsilon(1e-12));
}
