// Multi-head latent attention (models/transformer/mla.hpp) against its equations, on DeepSeek-V3's
// attention (DeepSeek-AI 2024, arXiv 2412.19437, Sec. 4.2 and its config.json): hidden 7168, 128 heads,
// q_lora_rank 1536, kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128.
#include <doctest/doctest.h>

#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "models/transformer/mla.hpp"
#include "models/transformer/transformer.hpp"
#include "moe_fixture.hpp"
#include "parallel/memory_model.hpp"
#include "results/evaluate.hpp"

namespace mla_test {

using dtsim::testing::layer_op;

nlohmann::json model(bool latent = true) {
  return {{"kind", "transformer"},
          {"layers", 8},
          {"hidden_size", 7168},
          {"heads", 128},
          {"ffn_hidden_size", 18432},
          {"vocab_size", 129280},
          {"seq_length", 4096},
          {"mlp", "swiglu"},
          {"mla",
           {{"q_lora_rank", latent ? 1536 : 0},
            {"kv_lora_rank", 512},
            {"qk_nope_head_dim", 128},
            {"qk_rope_head_dim", 64},
            {"v_head_dim", 128}}}};
}

dtsim::config::Scenario scenario(std::int64_t tensor, bool sp, bool latent = true) {
  return dtsim::testing::h100_scenario(model(latent), {{"tensor", tensor}, {"sequence_parallel", sp}}, 1, 8);
}

dtsim::models::ShardConfig shard_of(const dtsim::config::Scenario& s) {
  return {.tensor = s.parallelism.tensor,
          .sequence_parallel = s.parallelism.sequence_parallel,
          .micro_batch = s.training.micro_batch_size,
          .precision = s.training.precision};
}

}  // namespace mla_test

TEST_CASE("latent attention: DeepSeek-V3's 187.1 M attention parameters per layer") {
  // q_down 7168 x 1536 = 11,010,048; q norm 1536; q_up 1536 x 128 x 192 = 37,748,736; kv_down
  // 7168 x 576 = 4,128,768; kv norm 512; kv_up 512 x 128 x 256 = 16,777,216: 69,666,816; with the output
  // projection 128 x 128 x 7168 = 117,440,512: 187,107,328.
  const auto s = mla_test::scenario(1, false);
  REQUIRE(s.model.mla);
  const auto projections = dtsim::models::mla_parameter_tensors(*s.model.mla, 7168, 128, 1);
  CHECK(std::accumulate(projections.begin(), projections.end(), 0.0) == 69666816.0);
  // The layer: its two RMSNorms (2 x 7168), the projections, the output projection and the SwiGLU MLP
  // (3 x 7168 x 18432).
  CHECK(dtsim::models::parameters_per_layer(s.model) == 2 * 7168.0 + 187107328.0 + 3 * 7168.0 * 18432);
}

TEST_CASE("latent attention: the layer's GEMMs at the latent and head widths, the core at 192 and 128") {
  const auto s = mla_test::scenario(1, false);
  const auto p = dtsim::models::transformer_layer(s.model, mla_test::shard_of(s));
  const double tokens = 4096;  // micro-batch 1
  const auto gemm = [&](const std::string& name) {
    const auto* op = mla_test::layer_op(p.forward, name);
    REQUIRE(op != nullptr);
    return op->compute.gemm;
  };
  CHECK(gemm("q_down_projection").m == 4096);
  CHECK(gemm("q_down_projection").n == 1536);
  CHECK(gemm("q_down_projection").k == 7168);
  CHECK(gemm("kv_down_projection").n == 576);  // kv_lora_rank + qk_rope_head_dim
  CHECK(gemm("q_up_projection").n == 128 * 192);
  CHECK(gemm("q_up_projection").k == 1536);
  CHECK(gemm("kv_up_projection").n == 128 * 256);  // qk_nope + v per head
  CHECK(gemm("kv_up_projection").k == 512);
  CHECK(gemm("attention_projection").k == 128 * 128);  // the value heads
  // Flash attention: 2 s tokens heads (d_qk + d_v) FLOPs, the causal half executed.
  const auto* core = mla_test::layer_op(p.forward, "flash_attention");
  REQUIRE(core != nullptr);
  CHECK(core->compute.flops == doctest::Approx(2 * tokens * 4096 * 128 * (192 + 128)));
  CHECK(mla_test::layer_op(p.forward, "qkv_projection") == nullptr);
  // Backward: every projection's data and weight gradient (the data gradients of the down projections
  // summed), the core at 2x.
  for (const char* name : {"q_up_projection_dgrad", "q_up_projection_wgrad", "kv_up_projection_dgrad",
                           "kv_up_projection_wgrad", "q_down_projection_dgrad", "q_down_projection_wgrad",
                           "kv_down_projection_dgrad", "kv_down_projection_wgrad", "mla_down_grad_sum"}) {
    CAPTURE(name);
    CHECK(mla_test::layer_op(p.backward, name) != nullptr);
  }
  const auto* core_bwd = mla_test::layer_op(p.backward, "flash_attention_bwd");
  REQUIRE(core_bwd != nullptr);
  CHECK(core_bwd->compute.flops == doctest::Approx(2 * core->compute.flops));
}

TEST_CASE("latent attention with sequence parallelism gathers the latents, not the hidden states") {
  // Tensor 8: the duplicated down projections run on the rank's 4096 / 8 = 512 tokens; the normalized
  // latents and the rotary key, 1536 + 512 + 64 = 2112 wide, are all-gathered (2 bytes each) where a
  // standard layer gathers its 7168-wide input; the up projections hold 16 heads.
  const auto s = mla_test::scenario(8, true);
  const auto p = dtsim::models::transformer_layer(s.model, mla_test::shard_of(s));
  const auto* down = mla_test::layer_op(p.forward, "q_down_projection");
  REQUIRE(down != nullptr);
  CHECK(down->compute.gemm.m == 512);
  const auto* gather = mla_test::layer_op(p.forward, "mla_latent_all_gather");
  REQUIRE(gather != nullptr);
  CHECK(gather->comm_bytes == 4096.0 * 2112 * 2);
  CHECK(mla_test::layer_op(p.forward, "attention_all_gather") == nullptr);
  const auto* up = mla_test::layer_op(p.forward, "q_up_projection");
  REQUIRE(up != nullptr);
  CHECK(up->compute.gemm.n == 16 * 192);
  // Backward: the latents' gradients reduce-scattered, their inputs re-gathered for the weight gradients.
  const auto* reduce = mla_test::layer_op(p.backward, "mla_latent_grad_reduce");
  REQUIRE(reduce != nullptr);
  CHECK(reduce->role == dtsim::models::CommRole::tensor_reduce_scatter);
  CHECK(reduce->comm_bytes == 4096.0 * 2112 * 2);
  const auto* regather = mla_test::layer_op(p.backward, "mla_latent_regather");
  REQUIRE(regather != nullptr);
  CHECK(regather->weight_grad);
  // Without a query latent the queries come from the gathered hidden states: 7168 + 512 + 64 wide.
  const auto direct = mla_test::scenario(8, true, false);
  const auto q = dtsim::models::transformer_layer(direct.model, mla_test::shard_of(direct));
  CHECK(mla_test::layer_op(q.forward, "q_down_projection") == nullptr);
  REQUIRE(mla_test::layer_op(q.forward, "q_projection") != nullptr);
  CHECK(mla_test::layer_op(q.forward, "q_projection")->compute.gemm.k == 7168);
  CHECK(mla_test::layer_op(q.forward, "mla_latent_all_gather")->comm_bytes == 4096.0 * (7168 + 512 + 64) * 2);
}

TEST_CASE("latent attention: model FLOPs and the activations a layer keeps") {
  const auto s = mla_test::scenario(1, false);
  // Per token and layer: the projections 2 (7168 x 1536 + 1536 x 24576 + 7168 x 576 + 512 x 32768),
  // the output 2 x 16384 x 7168, the MLP 6 x 7168 x 18432, the core 2 s 128 (192 + 128); the logits
  // 2 x 7168 x 129280; forward + backward 3x, over s tokens of the batch of 8.
  const double h = 7168, s_len = 4096;
  const double projections = 2 * (h * 1536 + 1536 * 24576 + h * 576 + 512 * 32768);
  CHECK(2 * dtsim::models::mla_projection_weights(*s.model.mla, h, 128) == projections);
  const double layer = projections + 2 * 16384 * h + 6 * h * 18432 + 2 * s_len * 128 * (192 + 128);
  const double expected = 3 * (8 * layer + 2 * h * 129280) * s_len * 8;
  CHECK(dtsim::models::model_flops_per_iteration(s.model, 8) == doctest::Approx(expected).epsilon(1e-12));
  // Activations, no recompute, bf16, t = 1: 10 sbh replicated (Korthikanti et al.), the latents
  // 2 sb (2 x 1536 + 2 x 512 + 64) (down outputs and normalized latents), Q 2 sb x 128 x 192, K and V
  // 2 sb x 128 x (192 + 128), the attention output 2 sb x 16384, the SwiGLU intermediates 6 sb x 18432.
  const double sb = 4096;
  const double expected_bytes = sb * h * 10 + 2 * sb * (2 * 1536 + 2 * 512 + 64) + 2 * sb * 128 * 192 +
                                2 * sb * 128 * (192 + 128) + 2 * sb * 16384 + 6 * sb * 18432;
  auto none = s;
  none.training.activation_recompute = dtsim::config::Recompute::none;
  CHECK(dtsim::parallel::layer_activation_bytes(none) == doctest::Approx(expected_bytes).epsilon(1e-12));
}

TEST_CASE("latent attention runs end to end: the simulated FLOPs are the model FLOPs without recompute") {
  // Tensor 8 with SP on one node, 8 micro-batches: the layer programs' FLOPs (summed by the run as its
  // hardware FLOPs) equal model_flops_per_iteration's count when nothing is recomputed, so HFU = MFU:
  // the ops and the formula agree on every projection and on the core's widths.
  auto s = mla_test::scenario(8, true);
  s.training.activation_recompute = dtsim::config::Recompute::none;
  s.model.vocab_padding = 1;  // the logits at the model's vocabulary (129280 splits over 8 ranks)
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE(r.status == dtsim::results::Status::ok);
  CHECK(r.iteration_time_s > 0.0);
  CHECK(r.flops.hfu == doctest::Approx(r.flops.mfu).epsilon(1e-9));
  CHECK(r.memory.peak_bytes_per_gpu == dtsim::parallel::memory_per_gpu(s).total_bytes());
}

TEST_CASE("latent attention: every tensor rank holds the down projections and latent norms whole") {
  // Duplicated on each of the 8 ranks: q_down 7168 x 1536, q norm 1536, kv_down 7168 x 576, kv norm 512
  // = 15,140,864; the rest of the layer is split over the 8.
  const auto s = mla_test::scenario(8, true);
  const double whole = 7168.0 * 1536 + 1536 + 7168.0 * 576 + 512;
  CHECK(dtsim::models::tensor_replicated_parameters(s.model) == whole);
  const double layer = dtsim::models::parameters_per_layer(s.model);
  CHECK(dtsim::parallel::layer_parameters_per_gpu(s).dense == doctest::Approx((layer - whole) / 8 + whole));
  const auto per_rank = dtsim::models::dense_parameter_tensors_per_rank(s.model, 8);
  double sum = 0.0;
  for (const double e : per_rank) sum += e;
  CHECK(sum == doctest::Approx((layer - whole) / 8 + whole));
}

TEST_CASE(
    "latent attention: recompute module mla_up_proj drops the heads' queries, keys and values and reruns the "
    "up "
    "projections") {
  // The model above with 4 layers, one node (data parallel 8, distributed optimizer), BF16.
  nlohmann::json model = mla_test::model();
  model["layers"] = 4;
  const auto with = [&](const nlohmann::json& modules) {
    return dtsim::testing::h100_scenario(
        model, {{"distributed_optimizer", true}}, 1, 8,
        {{"activation_recompute", "selective"}, {"recompute_modules", modules}});
  };
  const auto core = with({"core_attn"});
  const auto up = with({"core_attn", "mla_up_proj"});
  // Per layer and micro-batch (sb = 4096 tokens, 2 bytes): queries 128 x 192 wide, keys 128 x 192 and
  // values 128 x 128: 2 x 4096 x (24,576 + 40,960) = 536,870,912 bytes no longer kept.
  CHECK(dtsim::parallel::layer_activation_bytes(core) - dtsim::parallel::layer_activation_bytes(up) ==
        doctest::Approx(2.0 * 4096 * (24576 + 40960)));
  const auto a = dtsim::results::evaluate(core, {.trace = true});
  const auto b = dtsim::results::evaluate(up, {.trace = true});
  REQUIRE_MESSAGE(b.status == dtsim::results::Status::ok, b.reason);
  const auto ka = dtsim::testing::spans_by_kernel(a);
  const auto kb = dtsim::testing::spans_by_kernel(b);
  // The latent norms, the up projections and the rotary embedding run twice; the down projections once.
  for (const char* kernel :
       {"q_latent_norm", "kv_latent_norm", "q_up_projection", "kv_up_projection", "rotary_embedding"}) {
    CAPTURE(kernel);
    CHECK(kb.at(kernel) == 2 * ka.at(kernel));
  }
  CHECK(kb.at("q_down_projection") == ka.at("q_down_projection"));
  CHECK(b.breakdown.recompute_s > a.breakdown.recompute_s);
}
