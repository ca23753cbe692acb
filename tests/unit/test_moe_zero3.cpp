// ZeRO-3 with experts (parallel/zero3.hpp): a mixture-of-experts layer's dense parameters are sharded
// and gathered over the data x context ranks, its routed experts over the expert_data ranks; the memory
// model shards each part so, and the lowering issues each part's gathers and reduce-scatters over its
// own group.
#include <doctest/doctest.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "moe_fixture.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/zero3.hpp"
#include "results/evaluate.hpp"

namespace moe_zero3_test {

using nlohmann::json;

// Mixtral 8x7B (models/presets/mixtral-8x7b.json) under ZeRO-3 on `nodes` DGX H100 nodes, expert 8,
// global batch 16 per node (2 micro-batches of 1 per rank).
// Full recompute keeps the activations small enough to fit.
dtsim::config::Scenario mixtral(std::int64_t nodes, const json& extra = json::object()) {
  json parallelism = {{"expert", 8}, {"zero_stage", 3}};
  parallelism.update(extra);
  return dtsim::testing::h100_scenario({{"preset", "mixtral-8x7b"}}, parallelism, nodes, 16 * nodes,
                                       {{"activation_recompute", "full"}});
}

// Mixtral's layer (test_moe.cpp derives it): 1,451,270,144 parameters, of them routed experts
// 8 x 3 x 4096 x 14336 = 1,409,286,144; dense 41,984,000 (QKV 25,165,824, output 16,777,216, two norms
// 4,096 each, router 32,768). Expert 8: one expert per GPU, 176,160,768 parameters.
constexpr double kDense = 41984000.0;
constexpr double kExperts = 176160768.0;

}  // namespace moe_zero3_test

TEST_CASE("ZeRO-3 with experts: a layer's dense and expert collectives") {
  auto s = moe_zero3_test::mixtral(2);
  REQUIRE_FALSE(dtsim::parallel::infeasibility(s).has_value());
  // Layer granularity: one dense collective, one of the rank's experts.
  CHECK(dtsim::parallel::zero3_layer_groups(s) == std::vector<double>{moe_zero3_test::kDense});
  CHECK(dtsim::parallel::zero3_expert_groups(s, s.model) == std::vector<double>{moe_zero3_test::kExperts});
  // Tensor granularity (threshold 100,000): norm + QKV, the output projection with the second norm and the
  // router after it (both below the threshold, trailing); the experts' up (2/3 of their parameters:
  // 2 x 4096 x 14336) and down weights.
  s.parallelism.zero3.granularity = dtsim::config::Zero3Granularity::tensor;
  CHECK(dtsim::parallel::zero3_layer_groups(s) ==
        std::vector<double>{4096.0 + 25165824, 16777216.0 + 4096 + 32768});
  CHECK(dtsim::parallel::zero3_expert_groups(s, s.model) == std::vector<double>{117440512.0, 58720256.0});
  // Gathered at once on demand per tensor: the largest collective, the experts' up weights.
  s.parallelism.zero3.fetch = dtsim::config::Zero3Fetch::on_demand;
  CHECK(dtsim::parallel::zero3_gathered_parameters(s) == 117440512.0);
  // On demand per layer: both parts, which the layer gathers back to back.
  s.parallelism.zero3.granularity = dtsim::config::Zero3Granularity::layer;
  CHECK(dtsim::parallel::zero3_gathered_parameters(s) == moe_zero3_test::kDense + moe_zero3_test::kExperts);
  // Prefetching: the layer in use and the next, dense and experts.
  s.parallelism.zero3.fetch = dtsim::config::Zero3Fetch::prefetch;
  CHECK(dtsim::parallel::zero3_gathered_parameters(s) ==
        2 * (moe_zero3_test::kDense + moe_zero3_test::kExperts));
}

TEST_CASE("ZeRO-3 with experts: weights sharded over the data ranks and the expert_data ranks") {
  // 16 GPUs, data 16, expert 8: expert_data 2. The stage holds 32 layers, the embedding (32000 x 4096)
  // and the head (4096 + 32000 x 4096): dense 32 x 41,984,000 + 262,148,096 = 1,605,636,096; experts
  // 32 x 176,160,768 = 5,637,144,576. BF16 weights: dense / 16 + experts / 2 + the gathered
  // 2 x (41,984,000 + 176,160,768), 2 bytes each.
  const auto s = moe_zero3_test::mixtral(2);
  const double dense = 32 * moe_zero3_test::kDense + 262148096.0;
  const double experts = 32 * moe_zero3_test::kExperts;
  const auto e = dtsim::parallel::memory_per_gpu(s);
  CHECK(e.weights_bytes == doctest::Approx(2 * dense / 16 + 2 * experts / 2 +
                                           2 * 2 * (moe_zero3_test::kDense + moe_zero3_test::kExperts)));
  // Gradients (FP32 main gradients, 4 B) sharded alike, as under ZeRO-2.
  CHECK(e.gradients_bytes == doctest::Approx(4 * dense / 16 + 4 * experts / 2));
}

TEST_CASE("ZeRO-3 with experts: each layer gathers and reduce-scatters both parts, every micro-batch") {
  // 16 GPUs, global batch 32: 2 micro-batches per rank. Per layer and micro-batch: the forward's and the
  // backward's gathers of the dense part and of the experts (4), one reduce-scatter of each (2); per
  // micro-batch the embedding (gathered for the forward and the backward) and the output layer
  // (gathered for the forward and kept through its backward), each reduce-scattered once:
  // 32 x 2 x 4 + 2 x 3 = 262 gathers, 32 x 2 x 2 + 2 x 2 = 132 reduce-scatters.
  const auto two_nodes = moe_zero3_test::mixtral(2);
  const auto r = dtsim::results::evaluate(two_nodes, {.trace = true});
  REQUIRE_MESSAGE(r.status == dtsim::results::Status::ok, r.reason);
  auto spans = dtsim::testing::spans_by_kernel(r);
  CHECK(spans["zero3_param_all_gather"] == 262);
  CHECK(spans["zero3_grad_reduce_scatter"] == 132);
  // One node, data 8 = expert 8: every GPU holds its expert alone (expert_data 1), nothing to gather of
  // it (8 of the 32 layers, so that the unsharded experts fit). 8 GPUs, global batch 16: 2 micro-batches;
  // 8 x 2 x 2 + 2 x 3 gathers, 8 x 2 + 2 x 2 reduce-scatters.
  const auto one_node = dtsim::testing::h100_scenario({{"preset", "mixtral-8x7b"}, {"layers", 8}},
                                                      {{"expert", 8}, {"zero_stage", 3}}, 1, 16,
                                                      {{"activation_recompute", "full"}});
  const auto one = dtsim::results::evaluate(one_node, {.trace = true});
  REQUIRE_MESSAGE(one.status == dtsim::results::Status::ok, one.reason);
  spans = dtsim::testing::spans_by_kernel(one);
  CHECK(spans["zero3_param_all_gather"] == 38);
  CHECK(spans["zero3_grad_reduce_scatter"] == 20);
  // Its memory: dense weights / 8, the experts whole, gathered the output layer (4096 + 32000 x 4096 =
  // 131,076,096, more than a layer's dense part) beside one layer's dense part:
  // 8 x 41,984,000 + 262,148,096 dense; 8 x 176,160,768 experts; BF16.
  CHECK(dtsim::parallel::zero3_expert_groups(one_node, one_node.model).empty());
  CHECK(dtsim::parallel::memory_per_gpu(one_node).weights_bytes ==
        doctest::Approx(2 * (8 * moe_zero3_test::kDense + 262148096.0) / 8 +
                        2 * 8 * moe_zero3_test::kExperts + 2 * (131076096.0 + moe_zero3_test::kDense)));
}

TEST_CASE("ZeRO-3 with experts: every-rank mode equals symmetric mode") {
  // The experts' collectives run on their own streams over the expert_data groups (gangs.hpp); on a uniform
  // cluster every rank runs as the symmetric representative. Also with folded experts (tensor 2, expert
  // tensor 1), with a pipeline, and fetching on demand (each gather after the rank's reductions so far,
  // its experts' over its own expert_data group).
  const std::vector<nlohmann::json> plans = {
      nlohmann::json::object(),
      {{"tensor", 2}, {"sequence_parallel", true}, {"expert_tensor", 1}},
      {{"pipeline", 2}},
      {{"zero3", {{"fetch", "on_demand"}}}}};
  for (const nlohmann::json& plan : plans) {
    CAPTURE(plan.dump());
    auto s = moe_zero3_test::mixtral(4, plan);
    REQUIRE_FALSE(dtsim::parallel::infeasibility(s).has_value());
    const auto symmetric = dtsim::results::evaluate(s, {});
    s.simulation.ranks = dtsim::config::RankMode::all;
    const auto all = dtsim::results::evaluate(s, {});
    REQUIRE_MESSAGE(symmetric.status == dtsim::results::Status::ok, symmetric.reason);
    REQUIRE_MESSAGE(all.status == dtsim::results::Status::ok, all.reason);
    CHECK(all.iteration_time_s == doctest::Approx(symmetric.iteration_time_s).epsilon(1e-9));
    CHECK(all.breakdown.exposed_data_comm_s ==
          doctest::Approx(symmetric.breakdown.exposed_data_comm_s).epsilon(1e-9));
  }
}
