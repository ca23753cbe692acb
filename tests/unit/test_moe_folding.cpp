// Folded experts (parallelism.expert_tensor 1 with tensor > 1: Megatron-Core's MoE parallel folding,
// parallel/mesh.hpp, models/transformer/moe.hpp) and pipeline splits whose first and last chunks hold
// only the embedding and the output layer (parallel/pipeline_schedule.hpp, chunk_layers).
#include <doctest/doctest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "models/transformer/transformer.hpp"
#include "moe_fixture.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/lower.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/mesh.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "results/evaluate.hpp"

namespace folding_test {

using nlohmann::json;

dtsim::config::Scenario mixtral(const json& parallelism) {
  return dtsim::testing::h100_scenario({{"preset", "mixtral-8x7b"}}, parallelism, 2, 64);
}

}  // namespace folding_test

TEST_CASE("MoE folding: the expert group takes the stage's ranks in tensor, context, data order") {
  // 16 GPUs: tensor 2 x data 8, expert 4, expert_tensor 1. A rank's place is j = tensor + 2 data, which
  // is its rank here: the expert group of rank 0 is j 0-3 (ranks 0-3, both tensor ranks of data 0 and 1),
  // that of rank 11 j 8-11; the expert_data group of rank 3 the j = 3 mod 4 (3, 7, 11, 15).
  const auto s = folding_test::mixtral(
      {{"tensor", 2}, {"sequence_parallel", true}, {"expert", 4}, {"expert_tensor", 1}});
  CHECK(s.parallelism.folded_experts());
  const auto mesh = dtsim::parallel::Mesh::of(s);
  std::vector<std::int64_t> members;
  mesh.group_members(mesh.coord_of(0), dtsim::parallel::GroupKind::expert, members);
  CHECK(members == std::vector<std::int64_t>{0, 1, 2, 3});
  mesh.group_members(mesh.coord_of(11), dtsim::parallel::GroupKind::expert, members);
  CHECK(members == std::vector<std::int64_t>{8, 9, 10, 11});
  mesh.group_members(mesh.coord_of(3), dtsim::parallel::GroupKind::expert_data, members);
  CHECK(members == std::vector<std::int64_t>{3, 7, 11, 15});
  CHECK(mesh.first_member(13, dtsim::parallel::GroupKind::expert) == 12);
  CHECK(mesh.first_member(13, dtsim::parallel::GroupKind::expert_data) == 1);
  // expert_data: tensor 2 / expert_tensor 1 x data 8 / expert 4 = 4 ranks hold the same experts.
  CHECK(s.parallelism.expert_data_degree() == 4);
  // Folded without expert parallelism every rank of the stage holds every expert: their gradients go
  // over all 16, not over the 8 data-parallel ranks of one tensor coordinate.
  const auto whole =
      folding_test::mixtral({{"tensor", 2}, {"sequence_parallel", true}, {"expert_tensor", 1}});
  const auto whole_mesh = dtsim::parallel::Mesh::of(whole);
  CHECK(whole_mesh.has_expert_groups());
  whole_mesh.group_members(whole_mesh.coord_of(5), dtsim::parallel::GroupKind::expert_data, members);
  CHECK(members.size() == 16);
  CHECK(whole.parallelism.expert_data_degree() == 16);
}

TEST_CASE("MoE folding: the experts are not split, and no tensor-parallel exchange surrounds them") {
  const dtsim::config::TransformerSpec m = folding_test::mixtral({{"expert", 8}}).model;
  const auto layer = [&](std::int64_t expert_tensor) {
    const dtsim::models::ShardConfig shard{.tensor = 2,
                                           .sequence_parallel = true,
                                           .micro_batch = 1,
                                           .expert = 8,
                                           .expert_tensor = expert_tensor};
    return dtsim::models::transformer_layer(m, shard);
  };
  const auto folded = layer(1);
  const auto split = layer(2);
  CHECK(dtsim::testing::layer_op(folded.forward, "moe_tp_all_gather") == nullptr);
  CHECK(dtsim::testing::layer_op(folded.forward, "moe_tp_reduce_scatter") == nullptr);
  CHECK(dtsim::testing::layer_op(split.forward, "moe_tp_all_gather") != nullptr);
  // Folded, the rank routes its 4096 / 2 = 2048 tokens' top-2 copies and its one local expert computes
  // R = 2048 x 2 x 1 = 4,096 copies at the full width 14,336: up [4096 x 4096] x [4096 x 2 x 14336].
  const auto* up = dtsim::testing::layer_op(folded.forward, "moe_expert_up");
  REQUIRE(up != nullptr);
  CHECK(up->compute.flops == doctest::Approx(2.0 * 4096 * 4096 * 2 * 14336));
  // Split over the tensor pair: R = 2048 x 2 x 2 = 8,192 copies at half the width; the same FLOPs.
  const auto* half = dtsim::testing::layer_op(split.forward, "moe_expert_up");
  REQUIRE(half != nullptr);
  CHECK(half->compute.flops == doctest::Approx(2.0 * 8192 * 4096 * 2 * 7168));
  // The token counts are all-gathered over expert x expert_tensor ranks: 8 x 1 x 8 experts x 8 bytes.
  const auto* counts = dtsim::testing::layer_op(folded.forward, "moe_token_count_all_gather");
  REQUIRE(counts != nullptr);
  CHECK(counts->comm_bytes == 8.0 * 8 * 8);
}

TEST_CASE("MoE folding: each GPU holds its experts whole, their states sharded over expert_data") {
  // 16 GPUs, tensor 2, data 8, expert 8. Split over the tensor pair (expert_tensor 2) each GPU holds a
  // sixteenth of a layer's 1,409,286,144 expert parameters and no other rank holds the same part
  // (expert_data = 8 / 8 = 1); folded (expert_tensor 1) an eighth, which 2 / 1 x 8 / 8 = 2 ranks hold.
  const auto split = folding_test::mixtral({{"tensor", 2}, {"sequence_parallel", true}, {"expert", 8}});
  const auto folded = folding_test::mixtral(
      {{"tensor", 2}, {"sequence_parallel", true}, {"expert", 8}, {"expert_tensor", 1}});
  REQUIRE_FALSE(dtsim::parallel::infeasibility(split));
  REQUIRE_FALSE(dtsim::parallel::infeasibility(folded));
  CHECK(dtsim::parallel::layer_parameters_per_gpu(split).experts == doctest::Approx(1409286144.0 / 16));
  CHECK(dtsim::parallel::layer_parameters_per_gpu(folded).experts == doctest::Approx(1409286144.0 / 8));
  CHECK(split.parallelism.expert_data_degree() == 1);
  CHECK(folded.parallelism.expert_data_degree() == 2);
  // Activations per layer and micro-batch: the same expert intermediates either way (R x f / e_t), but
  // split, the up GEMM keeps its input of R = 2048 x 2 x 2 = 8,192 copies at the full hidden size after
  // the all-gather, folded R = 4,096: (2 e_t + 2) x 8192 x 4096 / t bytes in BF16, 6 against 4, a
  // difference of 2 x 8192 x 4096 / 2.
  CHECK(dtsim::parallel::layer_activation_bytes(split) - dtsim::parallel::layer_activation_bytes(folded) ==
        doctest::Approx(2.0 * 8192 * 4096 / 2));
  // It runs where it fits: 32 GPUs in 2 stages, the experts' states sharded over their 2 ranks.
  const auto fits = dtsim::testing::h100_scenario({{"preset", "mixtral-8x7b"}},
                                                  {{"tensor", 2},
                                                   {"sequence_parallel", true},
                                                   {"pipeline", 2},
                                                   {"expert", 8},
                                                   {"expert_tensor", 1},
                                                   {"distributed_optimizer", true}},
                                                  4, 64);
  const auto r = dtsim::results::evaluate(fits, {});
  REQUIRE_MESSAGE(r.status == dtsim::results::Status::ok, r.reason);
  CHECK(r.breakdown.exposed_expert_comm_s > 0.0);
}

TEST_CASE("MoE folding: an expert tensor degree other than 1 or the tensor degree is not modelled") {
  const auto s = dtsim::testing::h100_scenario(
      {{"preset", "mixtral-8x7b"}},
      {{"tensor", 4}, {"sequence_parallel", true}, {"expert", 2}, {"expert_tensor", 2}}, 2, 64);
  const auto why = dtsim::parallel::infeasibility(s);
  REQUIRE(why);
  CHECK(*why ==
        "expert_tensor 2: only 1 (experts not split, folded over the tensor ranks) or the tensor degree 4 "
        "is modelled");
}

TEST_CASE("Pipeline split: the first and the last chunk may hold only the embedding and the output layer") {
  // Megatron-Core's split counting the embedding and the loss as layers: 94 layers on 32 x 3 chunks are
  // 96 slots of one, the ends empty.
  const auto qwen = dtsim::parallel::chunk_layers(94, 32, 3);
  REQUIRE(qwen.size() == 96);
  CHECK(qwen.front() == 0);
  CHECK(qwen.back() == 0);
  CHECK(std::set<std::int64_t>(qwen.begin() + 1, qwen.end() - 1) == std::set<std::int64_t>{1});
  // One layer short of the chunks: the loss alone at the end.
  const auto seven = dtsim::parallel::chunk_layers(7, 8, 1);
  CHECK(seven == std::vector<std::int64_t>{1, 1, 1, 1, 1, 1, 1, 0});

  // 6 layers on 8 stages: stage 0 holds only the embedding, stage 7 only the output layer; each still
  // reduces its gradients and gathers its parameters over the data-parallel group (distributed optimizer).
  const nlohmann::json gpt = {
      {"kind", "transformer"},   {"layers", 6},         {"hidden_size", 1024}, {"heads", 16},
      {"ffn_hidden_size", 4096}, {"vocab_size", 32000}, {"seq_length", 2048}};
  const auto s =
      dtsim::testing::h100_scenario(gpt, {{"pipeline", 8}, {"distributed_optimizer", true}}, 2, 16);
  REQUIRE_FALSE(dtsim::parallel::infeasibility(s));
  const auto lowered = dtsim::parallel::lower(s, {});
  const auto& g = lowered.graph;
  std::set<dtsim::graph::RankId> reducing;
  std::set<dtsim::graph::RankId> gathering;
  for (const auto& t : g.tasks()) {
    const std::string& name = g.labels()[t.label];
    if (name == "grad_reduce_scatter") reducing.insert(g.streams()[t.stream].rank);
    if (name == "param_all_gather") gathering.insert(g.streams()[t.stream].rank);
  }
  CHECK(reducing.size() == 8);
  CHECK(gathering.size() == 8);
  const auto r = dtsim::results::evaluate(s, {});
  CHECK(r.status == dtsim::results::Status::ok);

  // 5 layers on 8 stages leave a middle stage without a layer: refused with the reason.
  nlohmann::json five_layers = gpt;
  five_layers["layers"] = 5;
  const auto five = dtsim::testing::h100_scenario(five_layers, {{"pipeline", 8}}, 2, 16);
  const auto why = dtsim::parallel::infeasibility(five);
  REQUIRE(why);
  CHECK(why->find("layers 5 are fewer than pipeline x virtual_stages = 8 model chunks less the two ends") ==
        0);
}
