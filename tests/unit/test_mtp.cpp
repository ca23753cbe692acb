// Multi-token prediction modules (models/transformer/mtp.hpp): on the last pipeline stage, their
// parameters, model FLOPs, place in the pipeline split and programs.
#include <doctest/doctest.h>

#include <cstdint>
#include <numeric>
#include <string>

#include <nlohmann/json.hpp>

#include "models/transformer/mtp.hpp"
#include "models/transformer/transformer.hpp"
#include "moe_fixture.hpp"
#include "parallel/lower.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "results/evaluate.hpp"

namespace mtp_test {

// A dense model of 8 layers, hidden 1024, SwiGLU 4096 wide, vocabulary 32000, with `mtp` modules.
nlohmann::json model(std::int64_t mtp) {
  return {{"kind", "transformer"},   {"layers", 8},         {"hidden_size", 1024}, {"heads", 8},
          {"ffn_hidden_size", 4096}, {"vocab_size", 32000}, {"seq_length", 1024},  {"mlp", "swiglu"},
          {"mtp_layers", mtp}};
}

dtsim::config::Scenario scenario(std::int64_t mtp, std::int64_t pipeline) {
  return dtsim::testing::h100_scenario(model(mtp), {{"pipeline", pipeline}, {"data", 8 / pipeline}}, 1, 16);
}

}  // namespace mtp_test

TEST_CASE("multi-token prediction: a module's parameters and model FLOPs") {
  const auto with = mtp_test::scenario(1, 2).model;
  const auto without = mtp_test::scenario(0, 2).model;
  // One layer: attention 4 x 1024^2, two RMSNorms 2 x 1024, MLP 3 x 1024 x 4096; the projection
  // 2 x 1024^2 and three norms 3 x 1024.
  const double layer = 4.0 * 1024 * 1024 + 2 * 1024 + 3.0 * 1024 * 4096;
  CHECK(dtsim::models::mtp_projection_parameters(with) == 2.0 * 1024 * 1024 + 3 * 1024);
  CHECK(dtsim::models::total_parameters(with) - dtsim::models::total_parameters(without) ==
        doctest::Approx(layer + 2.0 * 1024 * 1024 + 3 * 1024));
  // Per token, forward: the layer's 2 x (4 h^2 + 3 h f) + 4 s h (attention over the full score matrix),
  // the projection 2 x 2h x h, the logits 2 h V; x 3 for forward and backward, x s tokens per sequence.
  const double h = 1024;
  const double s = 1024;
  const double per_token = 2 * (4 * h * h + 3 * h * 4096) + 4 * s * h + 2 * 2 * h * h + 2 * h * 32000;
  CHECK(dtsim::models::model_flops_per_iteration(with, 1) -
            dtsim::models::model_flops_per_iteration(without, 1) ==
        doctest::Approx(3 * per_token * s));
}

TEST_CASE("multi-token prediction: the modules take layer slots of the last chunk") {
  // DeepSeek-V3's 61 layers and one module on 16 stages: 62 slots, 3 on the two ends and 4 on the 14
  // others; the last chunk's 3 slots are 2 layers and the module.
  auto m = dtsim::testing::h100_scenario({{"preset", "deepseek-v3"}}, {{"pipeline", 16}}, 2, 16).model;
  REQUIRE(m.mtp_layers == 1);
  const auto chunks = dtsim::parallel::model_chunk_layers(m, 16, 1);
  CHECK(chunks.front() == 3);
  CHECK(chunks.back() == 2);
  CHECK(std::accumulate(chunks.begin(), chunks.end(), std::int64_t{0}) == 61);
  // Two modules on 32 chunks of 61 + 2 slots: the last chunk holds 1 slot, fewer than the modules, so
  // the layers are split as they are.
  m.mtp_layers = 2;
  CHECK(dtsim::parallel::model_chunk_layers(m, 32, 1) == dtsim::parallel::chunk_layers(61, 32, 1));
}

TEST_CASE("multi-token prediction: the last stage runs and holds the modules") {
  const auto s = mtp_test::scenario(1, 2);
  // 8 layers and a module on 2 stages: 9 slots, 5 + 4, so the last stage holds 3 layers and the module.
  CHECK(dtsim::parallel::model_chunk_layers(s.model, 2, 1) == std::vector<std::int64_t>{5, 3});
  const auto lowered = dtsim::parallel::lower(s, {.fuse_kernels = false});
  const auto& g = lowered.graph;
  std::int64_t projections = 0;
  std::int64_t logits = 0;
  std::int64_t projection_grads = 0;
  for (const auto& t : g.tasks()) {
    const std::string& name = g.labels()[t.label];
    projections += name == "mtp_projection" ? 1 : 0;
    projection_grads += name == "mtp_projection_wgrad" ? 1 : 0;
    logits += name == "logits" ? 1 : 0;
  }
  // Micro-batches: 16 / 4 = 4, each with one module on the last stage (symmetric: one rank per stage),
  // whose head computes logits as the main head does.
  CHECK(projections == 4);
  CHECK(projection_grads == 4);
  CHECK(logits == 2 * 4);
  // The last stage holds the module's layer, projection and norms and a copy of the embedding table.
  const auto without = mtp_test::scenario(0, 2);
  const double layer = 4.0 * 1024 * 1024 + 2 * 1024 + 3.0 * 1024 * 4096;
  const double embedding = 32000.0 * 1024;
  // Without modules the last stage holds 4 layers; with one, 3 and the module.
  CHECK(dtsim::parallel::stage_parameters_per_gpu(s, 1).dense -
            dtsim::parallel::stage_parameters_per_gpu(without, 1).dense ==
        doctest::Approx(-layer + layer + 2.0 * 1024 * 1024 + 3 * 1024 + embedding));
  // And it is slower than the model without: one layer's work more on one stage of two, and the head
  // twice.
  const double t_with = dtsim::results::evaluate(mtp_test::scenario(1, 1), {}).iteration_time_s;
  const double t_without = dtsim::results::evaluate(mtp_test::scenario(0, 1), {}).iteration_time_s;
  CHECK(t_with > t_without);
}

TEST_CASE("multi-token prediction: an interleaved last stage holds one micro-batch of its modules") {
  // 8 layers and a module on 2 stages x 2 virtual: 9 slots, chunks 2, 3, 2, 2 - 1 = 1 (the module in the
  // last). The last stage holds the output layer, an embedding copy and the module: its total is the
  // largest. It keeps the interleaved schedule's layer-micro-batches of its chunks (3 and 1 layers) and,
  // of the module, only what the last chunk holds at the peak: one micro-batch (its layer and its
  // projection's inputs, 4 x 1024 tokens x 1024 x 2 bytes), not (v - 1) p + 1 = 3.
  auto s = dtsim::testing::h100_scenario(
      mtp_test::model(1), {{"pipeline", 2}, {"virtual_stages", 2}, {"schedule", "interleaved"}, {"data", 4}},
      1, 16);
  const auto chunks = dtsim::parallel::model_chunk_layers(s.model, 2, 2);
  REQUIRE(chunks == std::vector<std::int64_t>{2, 3, 2, 1});
  const double layer = dtsim::parallel::layer_activation_bytes(s);
  const double in_flight = dtsim::parallel::peak_in_flight_layers(s.parallelism.schedule, 2, 1, 4, 2, chunks);
  const double module = layer + 4 * 1024.0 * 1024 * 2;
  CHECK(dtsim::parallel::memory_per_gpu(s).activations_bytes == doctest::Approx(in_flight * layer + module));
}
