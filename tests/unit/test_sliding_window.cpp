// Sliding-window attention (config::SlidingWindowSpec): which layers slide (models/transformer/
// layer_kinds.hpp), what a sliding layer's fused attention computes (models/transformer/transformer.cpp,
// executed_keys()), model FLOPs, and GPT-OSS 120B's preset (OpenAI 2025, arXiv 2508.10925; its
// config.json: sliding_window 128, sliding and full attention layers in turn).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "models/transformer/layer_kinds.hpp"
#include "models/transformer/transformer.hpp"
#include "moe_fixture.hpp"
#include "parallel/feasibility.hpp"
#include "results/evaluate.hpp"

namespace sliding_window_test {

// A dense Llama-style model of 4 layers, sequence 4096, with a sliding window of 128 and full attention
// in every `full_every`-th layer (0: none), or without a window (full_every < 0).
nlohmann::json model(std::int64_t full_every) {
  nlohmann::json m = {{"kind", "transformer"}, {"layers", 4},
                      {"hidden_size", 1024},   {"heads", 8},
                      {"kv_heads", 8},         {"ffn_hidden_size", 4096},
                      {"vocab_size", 32000},   {"seq_length", 4096},
                      {"mlp", "swiglu"}};
  if (full_every >= 0) m["sliding_window"] = {{"window", 128}, {"full_attention_every", full_every}};
  return m;
}

// One H100 of a DGX node: no communication beside the compute.
dtsim::config::Scenario one_gpu(const nlohmann::json& model) {
  const nlohmann::json s = {
      {"schema_version", 1},
      {"name", "sliding"},
      {"model", model},
      {"cluster", {{"node", "dgx-h100"}, {"nodes", 1}, {"gpus", 1}}},
      {"parallelism", nlohmann::json::object()},
      {"training", {{"global_batch_size", 2}, {"micro_batch_size", 1}, {"precision", "bf16"}}}};
  return dtsim::config::load_scenario_text(s.dump(), "sliding.json", dtsim::config::default_data_paths());
}

}  // namespace sliding_window_test

TEST_CASE("sliding window: every N-th layer keeps full attention, as Megatron-Core's skip frequency") {
  const auto s = sliding_window_test::one_gpu(sliding_window_test::model(2));
  const dtsim::models::LayerKinds kinds(s.model);
  REQUIRE(kinds.count() == 2);
  // 1-based layers 2 and 4 (0-based 1 and 3) are full; kinds: sliding first, then full.
  CHECK(kinds.of_layer(0) == 0);
  CHECK(kinds.of_layer(1) == 1);
  CHECK(kinds.of_layer(2) == 0);
  CHECK(kinds.of_layer(3) == 1);
  CHECK(kinds.counts(0, 4) == std::vector<std::int64_t>{2, 2});
  CHECK(kinds.counts(1, 4) == std::vector<std::int64_t>{1, 2});
  CHECK(dtsim::models::attended_keys(kinds.model(0)) == 128);
  CHECK(dtsim::models::attended_keys(kinds.model(1)) == 4096);
  CHECK(dtsim::models::mixed_layers(s.model));
  // Every layer sliding (N = 0, or N past the layers) and every layer full (N = 1) are one kind.
  for (const std::int64_t n : {0, 5, 1}) {
    CAPTURE(n);
    const auto u = sliding_window_test::one_gpu(sliding_window_test::model(n));
    CHECK(!dtsim::models::mixed_layers(u.model));
    CHECK(dtsim::models::LayerKinds(u.model).count() == 1);
    CHECK(dtsim::models::attended_keys(u.model) == (n == 1 ? 4096 : 128));
  }
  // A window as long as the sequence is no window: one kind of full layers.
  auto long_window = sliding_window_test::model(2);
  long_window["sliding_window"]["window"] = 4096;
  const auto l = sliding_window_test::one_gpu(long_window);
  CHECK(!dtsim::models::mixed_layers(l.model));
  CHECK(dtsim::models::attended_keys(l.model) == 4096);
}

TEST_CASE("sliding window with dense first layers: four kinds, routed before dense, sliding before full") {
  auto m = sliding_window_test::model(2);
  m["layers"] = 9;
  m["moe"] = {{"experts", 8}, {"top_k", 2}, {"expert_ffn_hidden_size", 1024}, {"first_dense_layers", 3}};
  const auto s = dtsim::testing::h100_scenario(m, nlohmann::json::object(), 1, 8);
  const dtsim::models::LayerKinds kinds(s.model);
  REQUIRE(kinds.count() == 4);
  // Layers 0..2 dense (0, 2 sliding, 1 full); 3..8 routed (4, 6, 8 sliding; 3, 5, 7 full).
  CHECK(kinds.counts(0, 9) == std::vector<std::int64_t>{3, 3, 2, 1});
  CHECK(kinds.of_layer(1) == 3);
  CHECK(kinds.of_layer(2) == 2);
  CHECK(kinds.of_layer(3) == 1);
  CHECK(kinds.of_layer(4) == 0);
  CHECK(kinds.model(0).moe);
  CHECK(!kinds.model(2).moe);
  CHECK(!kinds.model(1).sliding_window);
  CHECK(kinds.model(0).sliding_window->full_attention_every == 0);
}

TEST_CASE("sliding window: fused attention computes the tiles the window touches") {
  const auto s = sliding_window_test::one_gpu(sliding_window_test::model(0));
  const dtsim::models::ShardConfig shard;
  const auto p = dtsim::models::transformer_layer(s.model, shard);
  const auto* fw = dtsim::testing::layer_op(p.forward, "flash_attention");
  const auto* bw = dtsim::testing::layer_op(p.backward, "flash_attention_bwd");
  REQUIRE(fw != nullptr);
  REQUIRE(bw != nullptr);
  // 4096 tokens x 128 keys x 8 heads x 2 (d + dv) = 2 x 4096 x 128 x 8 x 256 model FLOPs. Per query the
  // mean window (128 x 129 / 2 + (4096 - 128) x 128) / 4096 = 126.015625 keys plus one 128-key tile:
  // 254.015625 executed, 1.9844970703125 of the counted 128; the efficiency curve sees a causal kernel of
  // sequence 2 x 254.015625 = 508.
  CHECK(fw->compute.flops == doctest::Approx(2.0 * 4096 * 128 * 8 * 256));
  CHECK(fw->compute.executed_fraction == doctest::Approx(1.9844970703125));
  CHECK(fw->compute.gemm.n == 508);
  CHECK(bw->compute.flops == doctest::Approx(2 * fw->compute.flops));
  CHECK(bw->compute.executed_fraction == doctest::Approx(1.9844970703125 * 1.25));
  // Full attention: all 4096 keys counted, the causal half executed, the sequence as the kernel's.
  const auto f = sliding_window_test::one_gpu(sliding_window_test::model(-1));
  const auto full = dtsim::models::transformer_layer(f.model, shard);
  const auto* ffw = dtsim::testing::layer_op(full.forward, "flash_attention");
  REQUIRE(ffw != nullptr);
  CHECK(ffw->compute.flops == doctest::Approx(2.0 * 4096 * 4096 * 8 * 256));
  CHECK(ffw->compute.executed_fraction == 0.5);
  CHECK(ffw->compute.gemm.n == 4096);
}

TEST_CASE("sliding window: the lowering runs each layer's own attention") {
  // Pipeline 1, one GPU: the forward time is the embedding, the 4 layers and the head, run one after
  // another; with N = 2 two layers slide and two attend fully, the mean of all-sliding and all-full.
  dtsim::results::EvaluateOptions options;
  const auto forward = [&](std::int64_t n) {
    return dtsim::results::evaluate(sliding_window_test::one_gpu(sliding_window_test::model(n)), options)
        .breakdown.forward_s;
  };
  const double sliding = forward(0);
  const double full = forward(1);
  CHECK(sliding < full);
  CHECK(forward(2) == doctest::Approx((sliding + full) / 2).epsilon(1e-6));
}

TEST_CASE("sliding window: GPT-OSS 120B's parameters and model FLOPs") {
  const auto s = dtsim::testing::h100_scenario({{"preset", "gpt-oss-120b"}}, {{"expert", 8}}, 1, 8);
  // Per layer: QKV 2880 x (4096 + 2 x 8 x 64) = 14,745,600, output 4096 x 2880 = 11,796,480, two RMSNorms
  // 5,760, router 2880 x 128 = 368,640, experts 128 x 3 x 2880 x 2880 = 3,185,049,600: 3,211,966,080.
  // 36 layers + embedding and output 2 x 201,088 x 2880 + final norm 2880 = 116,789,048,640 (the model
  // card's 116.83 B less biases and sink logits, as the preset states).
  CHECK(dtsim::models::total_parameters(s.model) == doctest::Approx(116789048640.0));
  // Forward per token and layer: 2 x 2880 x 5120 + 2 x 4096 x 2880 + router 2 x 2880 x 128 + 4 experts
  // 2 x 4 x 3 x 2880^2 = 252,887,040, plus attention 4 x keys x 4096: 2,097,152 with the window of 128,
  // 67,108,864 with all 4096 keys. 18 of each + logits 2 x 2880 x 201,088 = 11,507,908,608 per token;
  // x 3 (forward and backward) x 4096 tokens per sequence.
  CHECK(dtsim::models::model_flops_per_iteration(s.model, 1) == doctest::Approx(3 * 11507908608.0 * 4096));
}

TEST_CASE("sliding window: null removes a preset's window") {
  const auto s = dtsim::testing::h100_scenario({{"preset", "gpt-oss-120b"}, {"sliding_window", nullptr}},
                                               {{"expert", 8}}, 1, 8);
  CHECK(!s.model.sliding_window);
  CHECK(!dtsim::models::mixed_layers(s.model));
  CHECK(dtsim::models::attended_keys(s.model) == 4096);
}

TEST_CASE("sliding window: context parallelism is a stated infeasibility") {
  auto m = sliding_window_test::model(2);
  const auto s = dtsim::testing::h100_scenario(m, {{"context", 2}, {"data", 4}}, 1, 8);
  const auto why = dtsim::parallel::infeasibility(s);
  REQUIRE(why);
  CHECK(why->find("sliding-window attention") != std::string::npos);
  // Full attention everywhere (N = 1): context parallelism runs.
  m["sliding_window"]["full_attention_every"] = 1;
  CHECK(
      !dtsim::parallel::infeasibility(dtsim::testing::h100_scenario(m, {{"context", 2}, {"data", 4}}, 1, 8)));
}
