// Mixture-of-experts layers (config::MoeSpec, models/transformer/moe.hpp) and expert parallelism
// (parallel/mesh.hpp, feasibility.cpp, memory_model.cpp, lower_gradients.cpp): parameters and model FLOPs
// from the published dimensions, one rank's exchanges and grouped GEMMs, the expert groups, the memory an
// expert degree saves and the plans it cannot run.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "models/transformer/moe.hpp"
#include "models/transformer/transformer.hpp"
#include "moe_fixture.hpp"
#include "parallel/feasibility.hpp"
#include "parallel/lower.hpp"
#include "parallel/memory_model.hpp"
#include "parallel/mesh.hpp"
#include "results/evaluate.hpp"

namespace moe_test {

using nlohmann::json;

// Mixtral 8x7B (models/presets/mixtral-8x7b.json) on `nodes` DGX H100 nodes with the given degrees.
dtsim::config::Scenario mixtral(const json& parallelism, const json& moe = json::object(),
                                std::int64_t nodes = 2, std::int64_t global_batch = 64) {
  json model = {{"preset", "mixtral-8x7b"}};
  if (!moe.empty()) model["moe"] = moe;
  return dtsim::testing::h100_scenario(model, parallelism, nodes, global_batch);
}

// `s` evaluated with one rank per stage, then with every rank simulated (`s` is left in that mode); both
// must succeed.
std::pair<dtsim::results::Result, dtsim::results::Result> symmetric_and_every_rank(
    dtsim::config::Scenario& s) {
  auto symmetric = dtsim::results::evaluate(s, {});
  s.simulation.ranks = dtsim::config::RankMode::all;
  auto all = dtsim::results::evaluate(s, {});
  REQUIRE_MESSAGE(symmetric.status == dtsim::results::Status::ok, symmetric.reason);
  REQUIRE_MESSAGE(all.status == dtsim::results::Status::ok, all.reason);
  return {std::move(symmetric), std::move(all)};
}

}  // namespace moe_test

TEST_CASE("MoE: Mixtral 8x7B's parameters and model FLOPs from its published dimensions") {
  const auto s = moe_test::mixtral({{"pipeline", 2}, {"expert", 8}});
  const auto& m = s.model;
  // Per layer (h 4096, 32 heads of 128, 8 KV heads, 8 experts of FFN 14336, SwiGLU, RMSNorm):
  //   QKV 4096 x (4096 + 2 x 1024) = 25,165,824; output projection 4096 x 4096 = 16,777,216;
  //   two norms 8,192; router 4096 x 8 = 32,768; experts 8 x 3 x 4096 x 14336 = 1,409,286,144.
  CHECK(dtsim::models::routed_expert_parameters(m) == 1409286144.0);
  CHECK(dtsim::models::parameters_per_layer(m) == 1451270144.0);
  // Whole model: 32 layers + embedding 32000 x 4096 + final norm and output 4096 + 32000 x 4096:
  // 46,702,792,704, the paper's 46.7B (Jiang et al. 2024, Sec. 2).
  CHECK(dtsim::models::total_parameters(m) == 46702792704.0);
  // Active per token: 2 of 8 experts, 352,321,536 per layer.
  CHECK(dtsim::models::active_routed_parameters(m) == 352321536.0);
  // Model FLOPs per token and layer (seq 4096): 2h(w + 2 kv d) = 50,331,648; 2wh = 33,554,432; router
  // 2 x 4096 x 8 = 65,536; experts 2 x 352,321,536 = 704,643,072; attention 4 s w = 67,108,864:
  // 855,703,552; per token 32 x that + logits 2 x 4096 x 32000 = 27,644,690,432; x3 x seq 4096 x batch 64.
  CHECK(dtsim::models::model_flops_per_iteration(m, 64) == doctest::Approx(3.0 * 27644690432.0 * 4096 * 64));
}

TEST_CASE("MoE: one rank's exchanges and grouped GEMMs, balanced and skewed") {
  dtsim::config::TransformerSpec m = moe_test::mixtral({{"expert", 8}}).model;
  const dtsim::models::ShardConfig shard{.tensor = 1, .micro_batch = 1, .expert = 8};
  const auto p = dtsim::models::transformer_layer(m, shard);
  // Tokens T = 4096, top 2, h 4096, 2 bytes: each all-to-all moves the rank's T k h a = 67,108,864 bytes
  // (its whole buffer, graph::CommOp's all-to-all convention), twice forward and twice backward.
  const auto* dispatch = dtsim::testing::layer_op(p.forward, "moe_dispatch_all_to_all");
  REQUIRE(dispatch != nullptr);
  CHECK(dispatch->role == dtsim::models::CommRole::expert_all_to_all);
  CHECK(dispatch->comm_bytes == 67108864.0);
  CHECK(dtsim::testing::layer_op(p.forward, "moe_combine_all_to_all")->comm_bytes == 67108864.0);
  CHECK(dtsim::testing::layer_op(p.backward, "moe_combine_grad_all_to_all") != nullptr);
  CHECK(dtsim::testing::layer_op(p.backward, "moe_dispatch_grad_all_to_all") != nullptr);
  CHECK(dtsim::testing::layer_op(p.forward, "mlp_up") == nullptr);  // no dense MLP
  // One local expert (8 / 8) computes the rank's T k = 8,192 token copies: up [8192 x 4096] x
  // [4096 x 28672] = 2 x 8192 x 28672 x 4096 FLOPs.
  const auto* up = dtsim::testing::layer_op(p.forward, "moe_expert_up");
  REQUIRE(up != nullptr);
  CHECK(up->compute.flops == 2.0 * 8192 * 28672 * 4096);
  CHECK(up->compute.gemm.batch == 1);
  // Expert degree 2: four local experts of 2,048 copies each, the same FLOPs.
  const auto p2 = dtsim::models::transformer_layer(m, {.tensor = 1, .micro_batch = 1, .expert = 2});
  const auto* up2 = dtsim::testing::layer_op(p2.forward, "moe_expert_up");
  CHECK(up2->compute.gemm.batch == 4);
  CHECK(up2->compute.gemm.m == 2048);
  CHECK(up2->compute.flops == up->compute.flops);
  // The busiest rank takes 1.5x the mean: its GEMMs and its exchanges grow by 1.5.
  m.moe->load_imbalance = 1.5;
  const auto skewed = dtsim::models::transformer_layer(m, shard);
  CHECK(dtsim::testing::layer_op(skewed.forward, "moe_expert_up")->compute.flops == 1.5 * up->compute.flops);
  CHECK(dtsim::testing::layer_op(skewed.forward, "moe_dispatch_all_to_all")->comm_bytes == 1.5 * 67108864.0);
  // A capacity factor pads every expert to capacity: 1.25x the mean whatever the skew.
  m.moe->capacity_factor = 1.25;
  const auto capped = dtsim::models::transformer_layer(m, shard);
  CHECK(dtsim::testing::layer_op(capped.forward, "moe_expert_up")->compute.flops == 1.25 * up->compute.flops);
}

TEST_CASE("MoE: in FP8 the expert GEMMs run on the FP8 curve with their casts around them") {
  const dtsim::config::TransformerSpec m = moe_test::mixtral({{"expert", 8}}).model;
  const dtsim::models::ShardConfig bf16{.tensor = 1, .micro_batch = 1, .expert = 8};
  dtsim::models::ShardConfig fp8 = bf16;
  fp8.precision = dtsim::config::Precision::fp8;  // delayed scaling (Transformer Engine)
  const auto p16 = dtsim::models::transformer_layer(m, bf16);
  const auto p8 = dtsim::models::transformer_layer(m, fp8);
  for (const char* name : {"moe_expert_up", "moe_expert_down"}) {
    CAPTURE(name);
    CHECK(!dtsim::testing::layer_op(p16.forward, name)->compute.linear_layer);
    CHECK(dtsim::testing::layer_op(p8.forward, name)->compute.linear_layer);
  }
  for (const char* name :
       {"moe_expert_up_dgrad", "moe_expert_up_wgrad", "moe_expert_down_dgrad", "moe_expert_down_wgrad"}) {
    CAPTURE(name);
    CHECK(dtsim::testing::layer_op(p8.backward, name)->compute.linear_layer);
  }
  CHECK(!dtsim::testing::layer_op(p8.forward, "moe_router")->compute.linear_layer);  // the router in BF16
  // R = 8,192 token copies (T k, one local expert), h 4096, f 14,336 (up 28,672 for SwiGLU). Each cast
  // with its transpose reads 2 and writes 1 + 1 bytes per element (linear.hpp): forward the permuted
  // tokens 4 R h and the activation's output 4 R f, backward the down projection's output gradient
  // 4 R h and the up projection's 4 R 2f. No amax pass (delayed scaling), none in the BF16 run.
  const double r = 8192;
  CHECK(dtsim::testing::layer_op(p8.forward, "moe_expert_up_input_fp8_cast")->compute.bytes == 4 * r * 4096);
  CHECK(dtsim::testing::layer_op(p8.forward, "moe_expert_down_input_fp8_cast")->compute.bytes ==
        4 * r * 14336);
  CHECK(dtsim::testing::layer_op(p8.backward, "moe_expert_down_grad_fp8_cast")->compute.bytes ==
        4 * r * 4096);
  CHECK(dtsim::testing::layer_op(p8.backward, "moe_expert_up_grad_fp8_cast")->compute.bytes == 4 * r * 28672);
  CHECK(dtsim::testing::layer_op(p8.forward, "moe_expert_up_input_fp8_amax") == nullptr);
  CHECK(dtsim::testing::layer_op(p16.forward, "moe_expert_up_input_fp8_cast") == nullptr);
  CHECK(dtsim::testing::layer_op(p16.backward, "moe_expert_up_grad_fp8_cast") == nullptr);
}

TEST_CASE("MoE: gradient accumulation adds the router's and the local experts' tensors, no dense MLP") {
  const dtsim::config::TransformerSpec m = moe_test::mixtral({{"expert", 2}}).model;
  using dtsim::config::GradAccumulation;
  const auto accumulation = [&](GradAccumulation how) {
    const dtsim::models::ShardConfig shard{.tensor = 2,
                                           .micro_batch = 1,
                                           .precision = dtsim::config::Precision::bf16,
                                           .grad_accumulation = how,
                                           .expert = 2};
    const dtsim::models::LayerProgram program = dtsim::models::transformer_layer(m, shard);
    const auto* op = dtsim::testing::layer_op(program.backward, "grad_accumulation");
    REQUIRE(op != nullptr);
    return *op;
  };
  // Fused (the linears' weight gradients accumulate in their GEMMs): the two RMSNorm weights (2 x 4096)
  // and the router's 4096 x 8 weight, 3 tensors of 40,960 elements at 4 + 2 + 4 bytes each.
  const auto fused = accumulation(GradAccumulation::fused);
  CHECK(fused.compute.kernels == 3);
  CHECK(fused.compute.bytes == 10.0 * 40960);
  // Unfused, on tensor 2 and expert 2: also QKV 4096 x (4096 + 2 x 1024) / 2 = 12,582,912, the output
  // projection 4096 x 4096 / 2 = 8,388,608 and the 4 local experts' up and down weights as one tensor
  // each, 4 x (4096 x 2 x 7168 + 7168 x 4096) = 352,321,536: 7 tensors of 373,334,016 elements.
  const auto unfused = accumulation(GradAccumulation::unfused);
  CHECK(unfused.compute.kernels == 7);
  CHECK(unfused.compute.bytes == 10.0 * 373334016);
}

TEST_CASE("MoE: expert groups lie inside the data-parallel group") {
  // 16 GPUs: tensor 2 x data 8, expert 4. Ranks tp + 2 dp: the expert group of rank 0 is the data
  // coordinates 0-3 at tensor 0 (ranks 0, 2, 4, 6); its expert_data group the data coordinates 0 and 4
  // (ranks 0 and 8), which hold the same experts.
  const auto s = moe_test::mixtral({{"tensor", 2}, {"expert", 4}, {"sequence_parallel", true}});
  const auto mesh = dtsim::parallel::Mesh::of(s);
  std::vector<std::int64_t> members;
  mesh.group_members(mesh.coord_of(0), dtsim::parallel::GroupKind::expert, members);
  CHECK(members == std::vector<std::int64_t>{0, 2, 4, 6});
  mesh.group_members(mesh.coord_of(11), dtsim::parallel::GroupKind::expert, members);
  CHECK(members == std::vector<std::int64_t>{9, 11, 13, 15});
  mesh.group_members(mesh.coord_of(3), dtsim::parallel::GroupKind::expert_data, members);
  CHECK(members == std::vector<std::int64_t>{3, 11});
  CHECK(mesh.first_member(13, dtsim::parallel::GroupKind::expert) == 9);
  CHECK(mesh.first_member(13, dtsim::parallel::GroupKind::expert_data) == 5);
}

TEST_CASE("MoE: an expert degree divides the experts' weights, gradients and optimizer states") {
  const auto one = dtsim::parallel::memory_per_gpu(moe_test::mixtral({{"pipeline", 2}, {"expert", 1}}));
  const auto eight = dtsim::parallel::memory_per_gpu(moe_test::mixtral({{"pipeline", 2}, {"expert", 8}}));
  // A stage of 16 layers holds 16 x 1,409,286,144 expert parameters; at expert 8 each GPU holds an
  // eighth: 7/8 of them fewer, 2 bytes each in BF16 weights and 4 in FP32 gradients.
  const double fewer = 16.0 * 1409286144.0 * 7.0 / 8.0;
  CHECK(one.weights_bytes - eight.weights_bytes == doctest::Approx(2.0 * fewer));
  CHECK(one.gradients_bytes - eight.gradients_bytes == doctest::Approx(4.0 * fewer));
  // With the distributed optimizer, the dense states are sharded over data 8 and the experts' over
  // data / expert: at expert 8 each GPU keeps its own experts' 12 bytes of states unsharded.
  const auto sharded = dtsim::parallel::memory_per_gpu(
      moe_test::mixtral({{"pipeline", 2}, {"expert", 8}, {"distributed_optimizer", true}}));
  const double dense =
      16.0 * (1451270144.0 - 1409286144.0) + 32000.0 * 4096;  // stage 0: layers and embedding
  CHECK(sharded.optimizer_bytes == doctest::Approx(12.0 * (dense / 8.0 + 16.0 * 1409286144.0 / 8.0)));
}

TEST_CASE("MoE: the experts' gradients are reduced over the expert_data group") {
  // 32 GPUs, pipeline 2, data 16, expert 8: dense gradients over 16 ranks, the experts' over 16 / 8 = 2.
  const auto s =
      moe_test::mixtral({{"pipeline", 2}, {"expert", 8}, {"distributed_optimizer", true}}, {}, 4, 64);
  const auto lowered = dtsim::parallel::lower(s, {.fuse_kernels = true});
  const auto& g = lowered.graph;
  std::int64_t dense = 0;
  std::int64_t experts = 0;
  for (const auto& t : g.tasks()) {
    const std::string& name = g.labels()[t.label];
    const auto* op = std::get_if<dtsim::graph::CommOp>(&g.ops()[t.op]);
    if (name == "grad_reduce_scatter") {
      ++dense;
      CHECK(op->group.size == 16);
    } else if (name == "expert_grad_reduce_scatter") {
      ++experts;
      CHECK(op->group.size == 2);
    }
  }
  CHECK(dense > 0);
  CHECK(experts > 0);
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE_MESSAGE(r.status == dtsim::results::Status::ok, r.reason);
  CHECK(r.breakdown.exposed_expert_comm_s > 0.0);
}

TEST_CASE("MoE: dropless dispatch exchanges the token counts and the host waits for them") {
  dtsim::config::TransformerSpec m = moe_test::mixtral({{"expert", 8}}).model;
  const dtsim::models::ShardConfig shard{.tensor = 1, .micro_batch = 1, .expert = 8};
  const auto fw = dtsim::models::transformer_layer(m, shard).forward;
  // Each rank's count per expert, 8 experts x 8 bytes, all-gathered over the 8 expert ranks: 512 bytes
  // out (graph::CommOp's all-gather convention).
  const auto* counts = dtsim::testing::layer_op(fw, "moe_token_count_all_gather");
  REQUIRE(counts != nullptr);
  CHECK(counts->role == dtsim::models::CommRole::expert_all_gather);
  CHECK(counts->comm_bytes == 512.0);
  // The host reads them before it issues the dispatch: a zero-time op right after the permutation.
  const auto at = [&](const std::string& name) {
    return std::find_if(fw.begin(), fw.end(), [&](const auto& op) { return op.name == name; }) - fw.begin();
  };
  const auto* sync = dtsim::testing::layer_op(fw, "moe_token_count_sync");
  REQUIRE(sync != nullptr);
  CHECK(sync->host_waits);
  CHECK(sync->compute.kernels == 0);
  CHECK(sync->compute.bytes == 0.0);
  CHECK(at("moe_token_count_sync") == at("moe_permute") + 1);
  CHECK(at("moe_dispatch_all_to_all") == at("moe_token_count_sync") + 1);
  // Padded to capacity, every size is known beforehand: neither.
  m.moe->capacity_factor = 1.25;
  const auto padded = dtsim::models::transformer_layer(m, shard).forward;
  CHECK(dtsim::testing::layer_op(padded, "moe_token_count_all_gather") == nullptr);
  CHECK(dtsim::testing::layer_op(padded, "moe_token_count_sync") == nullptr);
  // Lowered, fused or not, each forward's sync is a task the host waits on.
  for (const bool fuse : {false, true}) {
    const auto lowered =
        dtsim::parallel::lower(moe_test::mixtral({{"pipeline", 2}, {"expert", 8}}), {.fuse_kernels = fuse});
    const auto& g = lowered.graph;
    std::vector<bool> waits(g.tasks().size(), false);
    for (const auto t : g.host_waits()) waits[t] = true;
    std::int64_t syncs = 0;
    for (std::size_t t = 0; t < g.tasks().size(); ++t) {
      if (g.labels()[g.tasks()[t].label] != "moe_token_count_sync") continue;
      ++syncs;
      CHECK(waits[t]);
    }
    // 16 layers per stage x 2 stages x 8 micro-batches (global 64 / data 8), forward only (no
    // recompute).
    CHECK(syncs == 16 * 2 * 8);
  }
}

TEST_CASE("MoE: plans the expert layers cannot run are infeasible, with the reason") {
  using dtsim::parallel::infeasibility;
  // Experts 8 over an expert degree of 16.
  CHECK(infeasibility(moe_test::mixtral({{"expert", 16}})).value().find("experts 8 are not divisible") == 0);
  // One node: tensor 4 leaves data 2 for an expert degree of 4.
  const auto two = moe_test::mixtral({{"tensor", 4}, {"sequence_parallel", true}, {"expert", 4}}, {}, 1);
  CHECK(infeasibility(two).value().find("data parallel 2 is not divisible by expert parallel 4") == 0);
  // Tensor parallelism without sequence parallelism.
  CHECK(
      infeasibility(moe_test::mixtral({{"tensor", 2}, {"expert", 8}})).value().find("sequence parallelism") !=
      std::string::npos);
  CHECK_FALSE(infeasibility(moe_test::mixtral({{"expert", 8}})).has_value());
}

TEST_CASE("MoE: every-rank mode with expert parallelism equals symmetric mode, and feels a straggler") {
  // The exchanges run on each rank's expert stream, as gang tasks over its expert group (gangs.hpp): on a
  // uniform cluster every rank runs as the symmetric representative of its stage. 32 GPUs: pipeline 2,
  // data 16, expert 8 (the expert groups inside the data groups); then tensor 2, expert 8 folded
  // (expert_tensor 1: the expert group spans the tensor and data ranks of a node).
  const std::vector<nlohmann::json> plans = {
      {{"pipeline", 2}, {"expert", 8}, {"distributed_optimizer", true}},
      {{"pipeline", 2},
       {"tensor", 2},
       {"sequence_parallel", true},
       {"expert", 8},
       {"expert_tensor", 1},
       {"distributed_optimizer", true}}};
  for (const nlohmann::json& plan : plans) {
    CAPTURE(plan.dump());
    auto s = moe_test::mixtral(plan, {}, 4, 64);
    const auto [symmetric, all] = moe_test::symmetric_and_every_rank(s);
    CHECK(all.iteration_time_s == doctest::Approx(symmetric.iteration_time_s).epsilon(1e-9));
    CHECK(all.breakdown.exposed_expert_comm_s ==
          doctest::Approx(symmetric.breakdown.exposed_expert_comm_s).epsilon(1e-9));
    // One GPU at half speed: its expert group's all-to-alls wait for it at every MoE layer, and the
    // data-parallel reductions after them; the iteration is slower, though not twice (its pipeline
    // stage's compute only).
    s.cluster.speed_factors = {dtsim::config::SpeedFactor{.node = 1, .gpu = 3, .compute = 0.5}};
    const auto slow = dtsim::results::evaluate(s, {});
    REQUIRE_MESSAGE(slow.status == dtsim::results::Status::ok, slow.reason);
    MESSAGE("even " << all.iteration_time_s << " s, one GPU at 0.5 " << slow.iteration_time_s << " s");
    CHECK(slow.iteration_time_s > all.iteration_time_s * 1.2);
    CHECK(slow.iteration_time_s < all.iteration_time_s * 2.0);
  }
}

TEST_CASE("MoE: every-rank mode without expert parallelism equals symmetric mode") {
  // 16 GPUs, pipeline 4, data 4, expert 1, 2 experts (fits): the experts' gradients go over the data
  // groups, as gang tasks in every-rank mode. Then tensor 2 with sequence parallelism: the token counts'
  // all-gather and the experts' gathers share the tensor stream with the attention's, and there is no
  // all-to-all on a group of one (it used to sit on that stream as a gang of another group kind, and
  // the gang table refused the stream's order).
  for (const std::int64_t tensor : {1, 2}) {
    CAPTURE(tensor);
    auto s = moe_test::mixtral({{"pipeline", 4},
                                {"tensor", tensor},
                                {"sequence_parallel", tensor > 1},
                                {"expert", 1},
                                {"distributed_optimizer", true}},
                               {{"experts", 2}}, 2, 16);
    const auto [symmetric, all] = moe_test::symmetric_and_every_rank(s);
    CHECK(all.iteration_time_s == doctest::Approx(symmetric.iteration_time_s).epsilon(1e-9));
  }
  const auto one = dtsim::models::transformer_layer(moe_test::mixtral({{"expert", 1}}).model,
                                                    {.tensor = 1, .micro_batch = 1, .expert = 1});
  CHECK(dtsim::testing::layer_op(one.forward, "moe_dispatch_all_to_all") == nullptr);
  CHECK(dtsim::testing::layer_op(one.backward, "moe_combine_grad_all_to_all") == nullptr);
}
