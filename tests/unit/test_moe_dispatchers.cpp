// Token dispatchers of a mixture of experts (config::MoeDispatcher): NCCL's all-to-all and DeepEP's
// node-aware normal kernels, which send each token once per destination node and GPU
// (models/transformer/moe.hpp, graph::CommOp::node_aware and gpu_copies); the routing's placement
// (config::MoeRouting).
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "models/transformer/moe.hpp"
#include "moe_fixture.hpp"
#include "network/collective_cost.hpp"
#include "results/evaluate.hpp"
#include "scenario_fixture.hpp"

namespace moe_dispatchers_test {

// C(a - b, k) / C(a, k) as a product.
double missed(double a, double b, int k) {
  double p = 1.0;
  for (int i = 0; i < k; ++i) p *= (a - b - i) / (a - i);
  return p;
}

nlohmann::json parallelism(const char* dispatcher, std::int64_t expert) {
  return {{"tensor", 1},
          {"pipeline", 1},
          {"data", 16},
          {"expert", expert},
          {"distributed_optimizer", true},
          {"moe_dispatcher", dispatcher}};
}

}  // namespace moe_dispatchers_test

TEST_CASE("node-aware copies: N q / k, q the chance a node holds one of a token's k experts") {
  using moe_dispatchers_test::missed;
  dtsim::config::MoeSpec moe;
  moe.experts = 128;
  moe.top_k = 8;
  // 4 nodes of 32 experts: q = 1 - C(96, 8) / C(128, 8) = 0.9045; N q / k = 4 x 0.9045 / 8 = 0.452.
  const double q4 = 1 - missed(128, 32, 8);
  CHECK(dtsim::models::node_aware_copies(moe, 4) == doctest::Approx(4 * q4 / 8).epsilon(1e-12));
  CHECK(dtsim::models::node_aware_copies(moe, 4) == doctest::Approx(0.452).epsilon(0.002));
  // Limited to 2 of the 4 nodes (DeepSeek-V3's rule with M = 2): q = (2 / 4)(1 - C(32, 8) / C(64, 8)).
  moe.max_nodes_per_token = 2;
  const double q2 = 0.5 * (1 - missed(64, 32, 8));
  CHECK(dtsim::models::node_aware_copies(moe, 4) == doctest::Approx(4 * q2 / 8).epsilon(1e-12));
  // One node: nothing leaves it. Many nodes, few experts per token: about one copy per node hit, so
  // nearly every copy still crosses (64 nodes, k = 8: q ~ 1 - (63/64)^8).
  moe.max_nodes_per_token.reset();
  CHECK(dtsim::models::node_aware_copies(moe, 1) == 1.0);
  moe.experts = 1024;
  CHECK(dtsim::models::node_aware_copies(moe, 64) > 0.94);
}

TEST_CASE(
    "GPU copies: G q / k, q the chance a GPU holds one of a token's k experts, and round robin routing") {
  using moe_dispatchers_test::missed;
  dtsim::config::MoeSpec moe;
  moe.experts = 128;
  moe.top_k = 8;
  // Qwen3-30B-A3B on 8 GPUs of one node (16 experts each): q = 1 - C(112, 8) / C(128, 8) = 0.667;
  // G q / k = 8 x 0.667 / 8: DeepEP sends 5.34 of a token's 8 copies.
  const double q8 = 1 - missed(128, 16, 8);
  CHECK(dtsim::models::gpu_copies(moe, 8, 1) == doctest::Approx(8 * q8 / 8).epsilon(1e-12));
  CHECK(dtsim::models::gpu_copies(moe, 8, 1) == doctest::Approx(0.667).epsilon(0.002));
  // Node-limited to 1 of 2 nodes, 16 GPUs: a GPU's node is chosen with probability 1/2, then the token's
  // 8 experts are among its node's 64: q = (1/2)(1 - C(56, 8) / C(64, 8)).
  moe.max_nodes_per_token = 1;
  const double q16 = 0.5 * (1 - missed(64, 8, 8));
  CHECK(dtsim::models::gpu_copies(moe, 16, 2) == doctest::Approx(16 * q16 / 8).epsilon(1e-12));
  moe.max_nodes_per_token.reset();
  // Round robin (NeMo AutoModel's fake balanced gate): token t's experts 8t .. 8t + 7 lie on one GPU of
  // 16 experts: one copy of 8; and on one node.
  moe.routing = dtsim::config::MoeRouting::round_robin;
  CHECK(dtsim::models::gpu_copies(moe, 8, 1) == 1.0 / 8);
  CHECK(dtsim::models::node_aware_copies(moe, 2) == 1.0 / 8);
  // GPT-OSS-120B on 64 GPUs of 8 nodes (E 128, k 4): experts 4t .. 4t + 3 on two GPUs (2 experts each)
  // of one node: 2 of 4 copies to GPUs, 1 of 4 over the fabric.
  moe.top_k = 4;
  CHECK(dtsim::models::gpu_copies(moe, 64, 8) == 0.5);
  CHECK(dtsim::models::node_aware_copies(moe, 8) == 0.25);
  // k = 3 over 8 GPUs of 16: the starts 3t mod 128 cycle through every residue (period 128); a run of 3
  // crosses a GPU boundary when it starts at 14 or 15 of its GPU's 16: 2 of 16 starts, 1 + 2/16 GPUs.
  moe.top_k = 3;
  CHECK(dtsim::models::gpu_copies(moe, 8, 1) == doctest::Approx((1.0 + 2.0 / 16) / 3).epsilon(1e-12));
}

TEST_CASE("round robin destinations: the closed form against every token of a period") {
  // Token t's experts t k .. t k + k - 1 (mod E), their blocks x B / E counted one by one over the E
  // tokens (a multiple of the period), for runs shorter and longer than a block, blocks that do not
  // divide E, and runs that wrap past E.
  const auto brute = [](std::int64_t e, std::int64_t k, std::int64_t blocks) {
    double sum = 0.0;
    for (std::int64_t t = 0; t < e; ++t) {
      std::vector<bool> hit(static_cast<std::size_t>(blocks), false);
      for (std::int64_t i = 0; i < k; ++i) hit[static_cast<std::size_t>((t * k + i) % e * blocks / e)] = true;
      sum += static_cast<double>(std::count(hit.begin(), hit.end(), true));
    }
    return std::min(1.0, sum / static_cast<double>(e) / static_cast<double>(k));
  };
  dtsim::config::MoeSpec moe;
  moe.routing = dtsim::config::MoeRouting::round_robin;
  const std::vector<std::array<std::int64_t, 3>> cases = {{128, 8, 8}, {128, 4, 64}, {96, 7, 8}, {60, 9, 7},
                                                          {64, 40, 8}, {256, 8, 32}, {10, 10, 3}};
  for (const std::array<std::int64_t, 3>& c : cases) {
    const std::int64_t e = c[0];
    const std::int64_t k = c[1];
    const std::int64_t blocks = c[2];
    CAPTURE(e);
    CAPTURE(k);
    CAPTURE(blocks);
    moe.experts = e;
    moe.top_k = k;
    CHECK(dtsim::models::gpu_copies(moe, blocks, 1) == doctest::Approx(brute(e, k, blocks)).epsilon(1e-12));
  }
  // The largest settings the loader accepts cost one pass over E / gcd(E, k) starts.
  moe.experts = 65536;
  moe.top_k = 4095;
  CHECK(dtsim::models::gpu_copies(moe, 256, 32) > 0.0);
}

TEST_CASE(
    "a node-aware all-to-all puts the fraction f of the off-node bytes on the fabric, g of the NVLink "
    "bytes") {
  // 16 ranks on 2 nodes of the fixture: the fabric (100e9 B/s per node) bounds the exchange; NVLink carries
  // the node's own copies and the forwarded ones, (7/16 + f x 8/16 x 7/8) s at 200e9 B/s, far below.
  const auto path = dtsim::testing::fixture_path();
  dtsim::graph::CommOp plain{dtsim::graph::CollectiveKind::all_to_all, 64e6, dtsim::graph::CommGroup(16, 2)};
  dtsim::graph::CommOp aware = plain;
  aware.node_aware = 0.5;
  const double latency = path.inter_latency_s;
  const double t_plain = dtsim::network::collective_cost(plain, path).time_s - latency;
  const double t_aware = dtsim::network::collective_cost(aware, path).time_s - latency;
  CHECK(t_aware == doctest::Approx(0.5 * t_plain).epsilon(1e-9));
  // Inside one node the fabric saves nothing; DeepEP's GPU copies scale the NVLink part, (7/8) s at the
  // fixture's intra-node bandwidth: sending 5.34 of 8 copies takes that fraction of the time.
  dtsim::graph::CommOp inside{dtsim::graph::CollectiveKind::all_to_all, 64e6, dtsim::graph::CommGroup(8, 1)};
  dtsim::graph::CommOp inside_aware = inside;
  inside_aware.node_aware = 1.0;
  CHECK(dtsim::network::collective_cost(inside_aware, path).time_s ==
        doctest::Approx(dtsim::network::collective_cost(inside, path).time_s));
  inside_aware.gpu_copies = 0.667;
  CHECK(dtsim::network::collective_cost(inside_aware, path).time_s - path.intra_latency_s ==
        doctest::Approx(0.667 * (dtsim::network::collective_cost(inside, path).time_s - path.intra_latency_s))
            .epsilon(1e-9));
}

TEST_CASE("DeepEP against the all-to-all: faster inside a node and across nodes, on both network levels") {
  using namespace moe_dispatchers_test;
  const nlohmann::json model = {{"preset", "qwen3-30b-a3b"}};
  // Expert parallelism 8: one node; DeepEP sends each token once per GPU it goes to.
  const auto inside_a2a =
      dtsim::results::evaluate(dtsim::testing::h100_scenario(model, parallelism("all_to_all", 8), 2, 64), {});
  const auto inside_deepep =
      dtsim::results::evaluate(dtsim::testing::h100_scenario(model, parallelism("deepep", 8), 2, 64), {});
  REQUIRE(inside_a2a.status == dtsim::results::Status::ok);
  CHECK(inside_deepep.breakdown.exposed_expert_comm_s < inside_a2a.breakdown.exposed_expert_comm_s);
  CHECK(inside_deepep.iteration_time_s < inside_a2a.iteration_time_s);
  // Expert parallelism 16 over both nodes: fewer bytes on the fabric.
  const auto across_a2a = dtsim::results::evaluate(
      dtsim::testing::h100_scenario(model, parallelism("all_to_all", 16), 2, 64), {});
  const auto across_deepep =
      dtsim::results::evaluate(dtsim::testing::h100_scenario(model, parallelism("deepep", 16), 2, 64), {});
  std::printf("qwen3-30b-a3b EP16 on 2 nodes: all-to-all %.6f s (expert comm %.6f), DeepEP %.6f s (%.6f)\n",
              across_a2a.iteration_time_s, across_a2a.breakdown.exposed_expert_comm_s,
              across_deepep.iteration_time_s, across_deepep.breakdown.exposed_expert_comm_s);
  CHECK(across_deepep.breakdown.exposed_expert_comm_s < across_a2a.breakdown.exposed_expert_comm_s);
  CHECK(across_deepep.iteration_time_s < across_a2a.iteration_time_s);
  // Every rank simulated: the same answer; the flow level: also faster than its all-to-all.
  auto every = dtsim::testing::h100_scenario(model, parallelism("deepep", 16), 2, 64);
  every.simulation.ranks = dtsim::config::RankMode::all;
  CHECK(dtsim::results::evaluate(every, {}).iteration_time_s ==
        doctest::Approx(across_deepep.iteration_time_s).epsilon(1e-9));
  auto flow_a2a = dtsim::testing::h100_scenario(model, parallelism("all_to_all", 16), 2, 64);
  auto flow_deepep = dtsim::testing::h100_scenario(model, parallelism("deepep", 16), 2, 64);
  flow_a2a.simulation.network = flow_deepep.simulation.network = dtsim::config::NetworkFidelity::flow;
  CHECK(dtsim::results::evaluate(flow_deepep, {}).iteration_time_s <
        dtsim::results::evaluate(flow_a2a, {}).iteration_time_s);
}
