// Layers of two kinds (models/transformer/layer_kinds.hpp): a mixture of experts whose first layers have
// a dense MLP, as DeepSeek-V3's first three (DeepSeek-AI 2024, arXiv 2412.19437, Sec. 4.2; its config.json,
// first_k_dense_replace 3, intermediate_size 18432).
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "models/transformer/layer_kinds.hpp"
#include "models/transformer/moe.hpp"
#include "models/transformer/transformer.hpp"
#include "moe_fixture.hpp"
#include "parallel/gradient_buckets.hpp"
#include "parallel/lower.hpp"
#include "parallel/memory_model.hpp"
#include "results/evaluate.hpp"

namespace layer_kinds_test {

// A small model of 4 layers, the first `dense` of them dense (SwiGLU 4096 wide), the others 8 experts of
// 1024, top 2.
nlohmann::json model(std::int64_t dense) {
  return {{"kind", "transformer"},
          {"layers", 4},
          {"hidden_size", 1024},
          {"heads", 8},
          {"ffn_hidden_size", 4096},
          {"vocab_size", 32000},
          {"seq_length", 1024},
          {"mlp", "swiglu"},
          {"moe",
           {{"experts", 8}, {"top_k", 2}, {"expert_ffn_hidden_size", 1024}, {"first_dense_layers", dense}}}};
}

dtsim::config::Scenario scenario(std::int64_t dense, const nlohmann::json& parallelism,
                                 const nlohmann::json& training = nlohmann::json::object()) {
  return dtsim::testing::h100_scenario(model(dense), parallelism, 1, 16, training);
}

}  // namespace layer_kinds_test

TEST_CASE("layer kinds: DeepSeek-V3's 671 B parameters, 3 dense layers and 58 mixtures of experts") {
  const auto s = dtsim::testing::h100_scenario({{"preset", "deepseek-v3"}}, {{"pipeline", 16}}, 2, 16);
  const dtsim::models::LayerKinds kinds(s.model);
  REQUIRE(kinds.count() == 2);
  CHECK(kinds.of_layer(2) == 1);  // dense
  CHECK(kinds.of_layer(3) == 0);  // the model as written: a mixture of experts
  CHECK(!kinds.model(1).moe);
  CHECK(kinds.counts(0, 61) == std::vector<std::int64_t>{58, 3});
  CHECK(kinds.counts(2, 6) == std::vector<std::int64_t>{3, 1});
  // Per layer: attention 187,107,328 (latent projections and output, test_mla.cpp) + 2 RMSNorms 14,336;
  // dense MLP 3 x 7168 x 18432 = 396,361,728; mixture: router 7168 x 256 = 1,835,008, routed experts
  // 256 x 3 x 7168 x 2048 = 11,274,289,152, shared expert 3 x 7168 x 2048 = 44,040,192. Embedding and
  // output layer 2 x 129280 x 7168 = 1,853,358,080, final norm 7168:
  // 61 x 187,121,664 + 3 x 396,361,728 + 58 x 11,320,164,352 + 1,853,365,248 = 671,026,404,352, the
  // report's 671 B for the main model. Its multi-token prediction module (mtp.hpp) adds a mixture-of-
  // experts layer 187,121,664 + 11,320,164,352, the projection 2 x 7168^2 = 102,760,448 and three
  // norms 3 x 7168: 11,610,067,968 (the report's 11.5 B of the module's own).
  auto main_model = s.model;
  main_model.mtp_layers = 0;
  CHECK(dtsim::models::total_parameters(main_model) == doctest::Approx(671026404352.0));
  CHECK(dtsim::models::total_parameters(s.model) - dtsim::models::total_parameters(main_model) ==
        doctest::Approx(11610067968.0));
  // Model FLOPs per token, forward: the dense layers' MLP 2 x 396,361,728 instead of the mixture's
  // 2 x (router + 8 of the routed experts + shared expert) = 2 x (1,835,008 + 352,321,536 + 44,040,192).
  auto moe_only = s.model;
  moe_only.moe->first_dense_layers = 0;
  const double per_token = (dtsim::models::model_flops_per_iteration(s.model, 1) -
                            dtsim::models::model_flops_per_iteration(moe_only, 1)) /
                           (3.0 * 4096);
  CHECK(per_token == doctest::Approx(3 * 2 * (396361728.0 - (1835008.0 + 352321536.0 + 44040192.0))));
}

TEST_CASE("layer kinds: memory and gradients count each stage's own layers") {
  // Pipeline 2 of 4 layers, 2 dense: stage 0 holds the two dense layers and the embedding, stage 1 the
  // two mixtures of experts and the output layer.
  const auto s =
      layer_kinds_test::scenario(2, {{"pipeline", 2}, {"data", 4}, {"distributed_optimizer", true}});
  const dtsim::models::LayerKinds kinds(s.model);
  const auto dense = dtsim::parallel::layer_parameters_per_gpu(s, kinds.model(1));
  const auto moe = dtsim::parallel::layer_parameters_per_gpu(s, kinds.model(0));
  // A dense layer: 4 x 1024^2 attention + 2 x 1024 norms + 3 x 1024 x 4096 MLP; experts 0.
  CHECK(dense.dense == 4.0 * 1024 * 1024 + 2 * 1024 + 3.0 * 1024 * 4096);
  CHECK(dense.experts == 0.0);
  // A mixture's experts: 8 x 3 x 1024 x 1024 on one expert rank.
  CHECK(moe.experts == 8.0 * 3 * 1024 * 1024);
  const auto stage0 = dtsim::parallel::stage_parameters_per_gpu(s, 0);
  const auto stage1 = dtsim::parallel::stage_parameters_per_gpu(s, 1);
  CHECK(stage0.dense == doctest::Approx(2 * dense.dense + 32000.0 * 1024));
  CHECK(stage0.experts == 0.0);
  CHECK(stage1.experts == doctest::Approx(2 * moe.experts));
  CHECK(stage1.dense == doctest::Approx(2 * moe.dense + 32000.0 * 1024 + 1024));
  // Stage 0's gradient buckets carry the dense layers' gradients only (4 bytes each, FP32 main grads).
  double bucket_bytes = 0.0;
  double expert_bytes = 0.0;
  for (const auto& b : dtsim::parallel::gradient_buckets(s, 0)) {
    bucket_bytes += b.bytes;
    expert_bytes += b.expert_bytes;
  }
  CHECK(bucket_bytes == doctest::Approx(4 * stage0.dense));
  CHECK(expert_bytes == 0.0);
  // 1F1B (micro-batches 16 / 4 = 4): stage 0 keeps min(m, p) = 2 micro-batches of its two dense layers
  // and the embedding's output (tokens x h x (2 + 1) bytes), stage 1 min(m, 1) = 1 of its two mixtures;
  // no recompute, so no working set. The estimate is the stage with the larger total.
  const auto memory = dtsim::parallel::memory_per_gpu(s);
  const double dense_layer = dtsim::parallel::layer_activation_bytes(s, kinds.model(1));
  const double moe_layer = dtsim::parallel::layer_activation_bytes(s, kinds.model(0));
  CHECK(dense_layer != doctest::Approx(moe_layer));
  const double first = 2 * 2 * dense_layer + 1024.0 * 1024 * 3;
  const double last = 1 * 2 * moe_layer;
  const bool either =
      memory.activations_bytes == doctest::Approx(first) || memory.activations_bytes == doctest::Approx(last);
  CHECK(either);
}

TEST_CASE("layer kinds: gradient buckets in the order gradients become final, each layer its own") {
  // One stage of 4 layers, the first dense; buckets of 1 MB, smaller than any layer: each layer closes
  // a bucket. Gradients become final from the last layer to the first: three mixtures (expert
  // gradients), then the dense layer (none), then the empty remainder. The first bucket also carries
  // the embedding's and the output layer's gradients.
  const auto s = layer_kinds_test::scenario(1, {{"data", 8}, {"expert", 8}}, {{"bucket_mb", 1}});
  const auto buckets = dtsim::parallel::gradient_buckets(s, 0);
  REQUIRE(buckets.size() == 5);
  const dtsim::models::LayerKinds kinds(s.model);
  const double grad = 4;  // FP32 main gradients
  const auto moe = dtsim::parallel::layer_parameters_per_gpu(s, kinds.model(0));
  const auto dense = dtsim::parallel::layer_parameters_per_gpu(s, kinds.model(1));
  for (std::int64_t i = 0; i < 4; ++i) {
    const auto& b = buckets[static_cast<std::size_t>(i)];
    CHECK(b.last_layer == i);
    CHECK(b.expert_bytes == doctest::Approx(i < 3 ? moe.experts * grad : 0.0));
  }
  CHECK(buckets[1].bytes == doctest::Approx(moe.dense * grad));
  CHECK(buckets[3].bytes == doctest::Approx(dense.dense * grad));
  CHECK(buckets[0].bytes == doctest::Approx((moe.dense + (2 * 32000.0 * 1024 + 1024)) * grad));
  CHECK(buckets[4].bytes == 0.0);
}

TEST_CASE("layer kinds: the lowering runs each layer's own program") {
  // One stage, 4 layers, the first dense, data and expert 8: each of the 16 / 8 = 2 micro-batches runs
  // one dense MLP and three routers and dispatches in its forward. A fused run of kernels is one task
  // labelled by its first and last kernel; communication is never fused.
  for (const bool fuse : {false, true}) {
    const auto s = layer_kinds_test::scenario(1, {{"data", 8}, {"expert", 8}});
    const auto lowered = dtsim::parallel::lower(s, {.fuse_kernels = fuse});
    const auto& g = lowered.graph;
    std::int64_t mlp = 0;
    std::int64_t routers = 0;
    std::int64_t dispatches = 0;
    for (const auto& t : g.tasks()) {
      const std::string& name = g.labels()[t.label];
      if (t.category != dtsim::graph::Category::forward && t.category != dtsim::graph::Category::expert_comm)
        continue;
      if (name == "mlp_up") ++mlp;
      if (name == "moe_router") ++routers;
      if (name == "moe_dispatch_all_to_all") ++dispatches;
    }
    CHECK(dispatches == 2 * 3);
    if (!fuse) {
      CHECK(mlp == 2);
      CHECK(routers == 2 * 3);
    }
  }
  // Every layer a mixture, and every layer dense: the mixed model's iteration lies between.
  const auto time = [](const dtsim::config::Scenario& s) {
    return dtsim::results::evaluate(s, {}).iteration_time_s;
  };
  const double mixed = time(layer_kinds_test::scenario(1, {{"data", 8}, {"expert", 8}}));
  const double moe = time(layer_kinds_test::scenario(0, {{"data", 8}, {"expert", 8}}));
  auto dense_scenario = layer_kinds_test::scenario(1, {{"data", 8}, {"expert", 8}});
  dense_scenario.model.moe->first_dense_layers = 3;
  const double dense3 = time(dense_scenario);
  CHECK(mixed != doctest::Approx(moe));
  CHECK(mixed != doctest::Approx(dense3));
  CHECK(std::min(moe, dense3) < mixed);
  CHECK(mixed < std::max(moe, dense3));
}
