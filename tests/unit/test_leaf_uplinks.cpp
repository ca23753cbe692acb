// Degraded leaf uplinks (config/speed_factors.hpp, a "leaf" entry of cluster.speed_factors): which nodes a
// leaf's factor reaches, which groups carry it (parallel/group_layouts.hpp, uplink_speed), what the leaf
// tier then costs (network/collective_cost.hpp, fabric_divisor), and what an every-rank simulation makes
// of it.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "config/speed_factors.hpp"
#include "core/errors.hpp"
#include "network/analytic_model.hpp"
#include "parallel/group_layouts.hpp"
#include "parallel/mesh.hpp"
#include "scenario_fixture.hpp"

namespace leaf_uplinks_test {

using dtsim::config::SpeedFactor;
using dtsim::graph::CommGroup;
using dtsim::network::TrafficPattern;

SpeedFactor leaf(std::int64_t index, double uplink) {
  SpeedFactor f;
  f.leaf = index;
  f.uplink = uplink;
  return f;
}

// Llama 2 7B on 4 DGX H100 nodes, 2 to a leaf, TP 2 x DP 16 (each data-parallel group has 4 members on
// every node), every rank simulated, with `factors`.
nlohmann::json two_leaves(const nlohmann::json& factors) {
  nlohmann::json s = {
      {"schema_version", 1},
      {"name", "leaf uplinks"},
      {"model", {{"preset", "llama2-7b"}}},
      {"cluster", {{"node", "dgx-h100"}, {"nodes", 4}, {"network", {{"topology", {{"nodes_per_leaf", 2}}}}}}},
      {"parallelism", {{"data", 16}, {"tensor", 2}, {"sequence_parallel", true}}},
      {"training", {{"global_batch_size", 64}, {"micro_batch_size", 2}}},
      {"simulation", {{"ranks", "all"}}}};
  if (!factors.is_null()) s["cluster"]["speed_factors"] = factors;
  return s;
}

}  // namespace leaf_uplinks_test

using namespace leaf_uplinks_test;

TEST_CASE("leaf uplinks: a leaf's factor reaches the nodes under it, entries for one leaf multiply") {
  // 5 nodes, 2 to a leaf: leaf 1 holds nodes 2 and 3, leaf 2 node 4 alone (0.8 x 0.8 = 0.64).
  const auto speeds = dtsim::config::node_uplink_speeds({leaf(1, 0.5), leaf(2, 0.8), leaf(2, 0.8)}, 5, 2);
  REQUIRE(speeds.size() == 5);
  CHECK(speeds[0] == 1.0);
  CHECK(speeds[1] == 1.0);
  CHECK(speeds[2] == 0.5);
  CHECK(speeds[3] == 0.5);
  CHECK(speeds[4] == doctest::Approx(0.64));
  // A factor of 1, or node entries only: no vector (every leaf at its profile's speed).
  CHECK(dtsim::config::node_uplink_speeds({leaf(1, 1.0)}, 5, 2).empty());
  CHECK(dtsim::config::node_uplink_speeds({SpeedFactor{0, std::nullopt, 0.5, 0.5}}, 5, 2).empty());
  // A leaf entry sets no node's NIC or NVLink factor.
  CHECK(dtsim::config::node_nic_speeds({leaf(0, 0.5)}, 5).empty());
}

TEST_CASE("group layouts: a group under several leaves carries its slowest leaf's uplink factor") {
  // 4 nodes of 8, 2 to a leaf, leaf 1 (nodes 2 and 3) at 0.5.
  dtsim::config::Scenario s = dtsim::testing::fixture_scenario();
  s.cluster.nodes = 4;
  s.parallelism.data = 32;
  const dtsim::config::NodeLinkSpeeds speeds = dtsim::config::node_link_speeds({leaf(1, 0.5)}, 4, 2);
  // Data 32 spans the 4 nodes, so both leaves: 0.5. Tensor 8 stays in a node: 1.
  const dtsim::parallel::Mesh dp = dtsim::parallel::Mesh::of(s);
  CHECK(dtsim::parallel::GroupLayouts(dp, true, speeds)
            .group(0, dtsim::parallel::GroupKind::data)
            .uplink_speed == 0.5);
  s.parallelism.data = 1;
  s.parallelism.tensor = 8;
  s.parallelism.pipeline = 4;
  const dtsim::parallel::Mesh pp = dtsim::parallel::Mesh::of(s);
  const dtsim::parallel::GroupLayouts staged(pp, true, speeds);
  CHECK(staged.group(0, dtsim::parallel::GroupKind::tensor).uplink_speed == 1.0);
  // Stage s on node s: 0 -> 1 stays under leaf 0; 1 -> 2 crosses into leaf 1; 2 -> 3 stays under leaf 1,
  // whose uplinks it does not use.
  CHECK(staged.transfer(0, true).uplink_speed == 1.0);
  CHECK(staged.transfer(8, true).uplink_speed == 0.5);
  CHECK(staged.transfer(16, false).uplink_speed == 0.5);
  CHECK(staged.transfer(16, true).uplink_speed == 1.0);
}

TEST_CASE(
    "a degraded leaf uplink divides the leaf tier's ratio, a ring feels it only past its members per leaf") {
  // Fixture path, non-blocking (oversubscription 1), 2 nodes to a leaf; a group on 4 adjacent nodes (2 per
  // leaf). Tier ratio o / f. Ring: max(1, ratio / 2 members per leaf); every node's traffic
  // (all_nodes, a tree): ratio; all-to-all: ratio x (4 - 2) / (4 - 1) of its peers outside the leaf.
  auto s = dtsim::testing::fixture_scenario();
  s.cluster.network.nodes_per_leaf = 2;
  const auto p = dtsim::network::path_params(s);
  CommGroup four{32, 4, 1};
  CHECK(dtsim::network::fabric_divisor(four, p, TrafficPattern::ring) == 1.0);
  CHECK(dtsim::network::fabric_divisor(four, p, TrafficPattern::all_nodes) == 1.0);
  four.uplink_speed = 0.5;  // ratio 2
  CHECK(dtsim::network::fabric_divisor(four, p, TrafficPattern::ring) == 1.0);
  CHECK(dtsim::network::fabric_divisor(four, p, TrafficPattern::all_nodes) == 2.0);
  CHECK(dtsim::network::fabric_divisor(four, p, TrafficPattern::all_to_all) == doctest::Approx(4.0 / 3.0));
  four.uplink_speed = 0.25;  // ratio 4
  CHECK(dtsim::network::fabric_divisor(four, p, TrafficPattern::ring) == 2.0);
  // Under 2:1 oversubscription a halved uplink is a 4:1 tier.
  s.cluster.network.oversubscription = 2.0;
  four.uplink_speed = 0.5;
  CHECK(dtsim::network::fabric_divisor(four, dtsim::network::path_params(s), TrafficPattern::all_nodes) ==
        4.0);
  // A pair across a leaf boundary (nodes 1 and 2): its span of 2 nodes fits a leaf's size, but the
  // layout gives it the factor only because it crosses, so the tier applies: ratio 2 for its traffic.
  CommGroup pair{2, 2, 1};
  pair.uplink_speed = 0.5;
  CHECK(dtsim::network::fabric_divisor(pair, p, TrafficPattern::all_nodes) == 2.0);
}

TEST_CASE("every rank: a degraded leaf uplink slows the data-parallel reduction across leaves") {
  // Each 16-wide data-parallel group has 2 nodes under each leaf. At 0.25 of leaf 1's uplinks the ring's
  // tier divisor is 2 (above), the reduction's exposed part and the iteration grow; tensor parallelism
  // stays inside the nodes. A factor of 1 changes nothing, to the byte.
  const auto base = dtsim::testing::evaluate_json(two_leaves(nullptr));
  const auto same = dtsim::testing::evaluate_json(two_leaves({{{"leaf", 1}, {"uplink", 1.0}}}));
  const auto slow = dtsim::testing::evaluate_json(two_leaves({{{"leaf", 1}, {"uplink", 0.25}}}));
  REQUIRE(base.status == dtsim::results::Status::ok);
  REQUIRE(slow.status == dtsim::results::Status::ok);
  MESSAGE("exposed data-parallel communication: "
          << base.breakdown.exposed_data_comm_s << " s, with leaf 1's "
          << "uplinks at 0.25: " << slow.breakdown.exposed_data_comm_s << " s; iteration "
          << base.iteration_time_s << " -> " << slow.iteration_time_s << " s");
  CHECK(same.iteration_time_s == base.iteration_time_s);
  CHECK(slow.breakdown.exposed_data_comm_s > base.breakdown.exposed_data_comm_s);
  CHECK(slow.iteration_time_s > base.iteration_time_s);
  CHECK(slow.breakdown.exposed_tensor_comm_s == doctest::Approx(base.breakdown.exposed_tensor_comm_s));
}

TEST_CASE(
    "the flow level runs degraded NICs as the analytic level costs them, with oversubscribed tiers too") {
  // SimGrid's max-min sharing with every NIC cable of the collective's group at the group's factor
  // (network/flow_job.hpp, make_flow_job) against the analytic level's min(nic_speed, 1 / tier divisor)
  // (collective_cost.hpp): on a 1:1 fat tree and on one oversubscribed 4:1, node 2's NICs at 0.25.
  // Tolerance 2% (measured: equal). NVLink and uplink factors are refused on the flow level.
  const auto on = [](nlohmann::json s, const char* network, double oversubscription) {
    s["simulation"]["network"] = network;
    s["cluster"]["network"]["topology"]["oversubscription"] = oversubscription;
    return dtsim::testing::evaluate_json(s);
  };
  const nlohmann::json slow_nic = nlohmann::json::array({{{"node", 2}, {"nic", 0.25}}});
  for (const double oversubscription : {1.0, 4.0}) {
    CAPTURE(oversubscription);
    const auto healthy = on(two_leaves(nullptr), "flow", oversubscription);
    const auto flow = on(two_leaves(slow_nic), "flow", oversubscription);
    const auto analytic = on(two_leaves(slow_nic), "analytic", oversubscription);
    REQUIRE(flow.status == dtsim::results::Status::ok);
    MESSAGE("oversubscription " << oversubscription << ": flow " << flow.iteration_time_s << " s, analytic "
                                << analytic.iteration_time_s << " s, healthy flow "
                                << healthy.iteration_time_s << " s");
    CHECK(flow.iteration_time_s > healthy.iteration_time_s);
    CHECK(flow.iteration_time_s == doctest::Approx(analytic.iteration_time_s).epsilon(0.02));
  }
  auto nvlink = two_leaves(nlohmann::json::array({{{"node", 2}, {"nvlink", 0.25}}}));
  nvlink["simulation"]["network"] = "flow";
  CHECK_THROWS_AS(dtsim::testing::evaluate_json(nvlink), dtsim::core::InputError);
}
