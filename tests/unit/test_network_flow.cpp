// The topology graph and the `flow` network model (SimGrid flow level) against the analytic model.
// Hardware: tests/unit/scenario_fixture.hpp: 8 GPUs per node, intra 250 GB/s x 0.8 = 200e9 B/s,
// 8 NICs of 200 Gb/s x 0.5 = 12.5e9 B/s each (100e9 B/s per node).
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "core/errors.hpp"
#include "core/parallel_for.hpp"
#include "network/analytic_model.hpp"
#include "network/flow_helper.hpp"
#include "network/flow_job.hpp"
#include "network/flow_model.hpp"
#include "network/topology.hpp"
#include "scenario_fixture.hpp"

namespace {

using dtsim::graph::CollectiveKind;
using dtsim::graph::CommGroup;
using dtsim::graph::CommOp;

dtsim::config::Scenario scenario(std::int64_t nodes) {
  auto s = dtsim::testing::fixture_scenario();
  s.cluster.nodes = nodes;
  s.simulation.network = dtsim::config::NetworkFidelity::flow;
  s.cluster.network.all_reduce_algorithm = dtsim::config::AllReduceAlgorithm::ring;
  return s;
}

double analytic_s(const dtsim::config::Scenario& s, const CommOp& op) {
  return dtsim::network::collective_time_s(op, dtsim::network::path_params(s));
}

double flow_s(const dtsim::config::Scenario& s, const CommOp& op) {
  return static_cast<double>(dtsim::network::FlowModel(s).duration(op)) * 1e-9;
}

double rel_error(double a, double b) { return std::abs(a - b) / b; }

}  // namespace

TEST_CASE("topology: routes climb only the tiers they must") {
  auto s = scenario(4);
  s.cluster.network.nodes_per_leaf = 2;
  const dtsim::network::Topology fat(dtsim::network::topology_shape(s));
  // gpu->switch->nic->leaf->nic->switch->gpu inside a leaf; leaf->spine->leaf added across leaves.
  CHECK(fat.route(0, 0, 0, 1).size() == 2);
  CHECK(fat.route(0, 0, 1, 0).size() == 6);
  CHECK(fat.route(0, 0, 2, 0).size() == 8);
  CHECK(fat.tiers(0, 0, 1, 5) == 1);
  CHECK(fat.tiers(0, 0, 3, 0) == 2);
  s.cluster.network.topology = dtsim::config::TopologyKind::rail_optimized;
  const dtsim::network::Topology rails(dtsim::network::topology_shape(s));
  // Same rail: one leaf; GPU 0 to GPU 1 of another node: NIC 0 to NIC 1, through a spine.
  CHECK(rails.route(0, 0, 1, 0).size() == 6);
  CHECK(rails.route(0, 0, 1, 1).size() == 8);
  CHECK(rails.tiers(0, 0, 1, 1) == 2);
  // ECMP choice by the source NIC: a fat-tree leaf's NICs spread over its spine planes (both routes
  // leave leaf 0 on different uplinks), each carrying the leaf's 2 x 8 NICs x 12.5e9 B/s / 8 planes.
  CHECK(fat.route(0, 0, 2, 0)[3] != fat.route(0, 1, 2, 1)[3]);
  CHECK(fat.link(fat.route(0, 0, 2, 0)[3]).bytes_per_s == doctest::Approx(2 * 12.5e9));
  // A rail leaf holds one NIC index of 2 nodes: one uplink, to the pod's spines taken as one switch,
  // carrying all of its 2 x 12.5e9 B/s.
  CHECK(rails.link(rails.route(0, 0, 2, 0)[3]).bytes_per_s == doctest::Approx(2 * 12.5e9));
}

TEST_CASE("a rail leaf's uplinks carry its whole downlink over the oversubscription, as the analytic level") {
  // 4 nodes, rail groups of 2 (rail leaf k holds NIC k of 2 nodes), one ring all-reduce of 1 GB over 32
  // GPUs (8 channels, one per rail). 1:1: nothing is short, t = 2 x 31/32 x 1e9 / 100e9 = 19.4 ms (+
  // latencies). 4:1: a rail leaf's uplink is 2 x 12.5e9 / 4 = 6.25e9 B/s and its channel leaves it once,
  // against 12.5e9 wanted: twice as slow (analytic: max(1, 4 / 2) = 2). Tolerance 5%. (A rail leaf's
  // uplink once went to one spine plane of eight, each sized for an eighth of it: 8 times too little.)
  auto s = scenario(4);
  s.cluster.network.topology = dtsim::config::TopologyKind::rail_optimized;
  s.cluster.network.nodes_per_leaf = 2;
  const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  const double flow_1 = flow_s(s, op);
  const double analytic_1 = analytic_s(s, op);
  s.cluster.network.oversubscription = 4.0;
  const double flow_4 = flow_s(s, op);
  const double analytic_4 = analytic_s(s, op);
  MESSAGE("rail-optimized 1:1 flow ", flow_1 * 1e3, " ms, analytic ", analytic_1 * 1e3, " ms; 4:1 flow ",
          flow_4 * 1e3, " ms, analytic ", analytic_4 * 1e3, " ms");
  CHECK(rel_error(flow_1, analytic_1) < 0.05);
  CHECK(rel_error(flow_4, analytic_4) < 0.05);
  CHECK(flow_4 / flow_1 == doctest::Approx(2.0).epsilon(0.05));
}

TEST_CASE("flow agrees with analytic within 5% where nothing is shared") {
  // One ring all-reduce of 1 GB: t = 2(n-1)/n x 1e9 / min(200e9, 100e9) (+ latencies); 8 channels, one
  // per NIC. Across 2 nodes (n = 16): 18.75 ms; across 8 nodes (n = 64): 19.7 ms.
  for (const std::int64_t nodes : {2, 8}) {
    const auto s = scenario(nodes);
    const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{nodes * 8, nodes, 1}};
    const double a = analytic_s(s, op);
    const double f = flow_s(s, op);
    MESSAGE("ring all-reduce over ", nodes, " nodes: analytic ", a * 1e3, " ms, flow ", f * 1e3,
            " ms, error ", rel_error(f, a) * 100, "%");
    CHECK(rel_error(f, a) < 0.05);
  }
  // Data-parallel rings, one per GPU (r = 1, 8 groups per node, one NIC each): 12.5e9 B/s per ring,
  // t = 2 x 7/8 x 1e9 / 12.5e9 = 140 ms.
  const auto s = scenario(8);
  const CommOp dp{CollectiveKind::all_reduce, 1e9, CommGroup{8, 8, 8}};
  CHECK(rel_error(flow_s(s, dp), analytic_s(s, dp)) < 0.05);
  CHECK(flow_s(s, dp) == doctest::Approx(0.140).epsilon(0.05));
}

TEST_CASE("oversubscription slows cross-leaf traffic by its ratio, flow and analytic") {
  // One node per leaf: every ring hop between nodes crosses the leaf uplinks, which carry 1/2 of the
  // NICs' bandwidth at 2:1: the inter-node-bound ring takes twice as long (37.5 ms vs 18.75 ms).
  auto s = scenario(2);
  const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{16, 2, 1}};
  const double flow_1 = flow_s(s, op);
  const double analytic_1 = analytic_s(s, op);
  s.cluster.network.oversubscription = 2.0;
  const double flow_2 = flow_s(s, op);
  const double analytic_2 = analytic_s(s, op);
  MESSAGE("2:1 slowdown: flow ", flow_2 / flow_1, ", analytic ", analytic_2 / analytic_1);
  CHECK(flow_2 / flow_1 == doctest::Approx(2.0).epsilon(0.05));
  CHECK(analytic_2 / analytic_1 == doctest::Approx(2.0).epsilon(0.05));
  // Both nodes under one leaf: nothing crosses the oversubscribed tier.
  s.cluster.network.nodes_per_leaf = 2;
  CHECK(flow_s(s, op) == doctest::Approx(flow_1).epsilon(0.01));
  CHECK(analytic_s(s, op) == doctest::Approx(analytic_1).epsilon(0.01));
}

TEST_CASE(
    "rail-optimized keeps rail-aligned rings under one leaf where a fat-tree of the same radix cannot") {
  // 16-port leaves at 4:1: a fat-tree leaf holds 2 nodes (8 NICs each), a rail leaf NIC k of 16 nodes.
  // A ring over 4 nodes leaves each fat-tree leaf once per channel: uplink per plane 16 x 12.5e9 /
  // (8 x 4) = 6.25e9 B/s against 12.5e9 wanted: twice as slow (analytic: max(1, 4 / 2) = 2). On the
  // rail-optimized fabric the 4 nodes share their rail leaves: no slowdown.
  auto s = scenario(4);
  s.cluster.network.oversubscription = 4.0;
  s.cluster.network.nodes_per_leaf = 2;
  const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  const double fat_flow = flow_s(s, op);
  const double fat_analytic = analytic_s(s, op);
  s.cluster.network.topology = dtsim::config::TopologyKind::rail_optimized;
  s.cluster.network.nodes_per_leaf = 4;
  const double rail_flow = flow_s(s, op);
  const double rail_analytic = analytic_s(s, op);
  MESSAGE("fat-tree / rail-optimized: flow ", fat_flow / rail_flow, ", analytic ",
          fat_analytic / rail_analytic);
  CHECK(fat_flow / rail_flow == doctest::Approx(2.0).epsilon(0.05));
  CHECK(fat_analytic / rail_analytic == doctest::Approx(2.0).epsilon(0.05));
}

TEST_CASE("flow model caches each distinct collective and is deterministic") {
  const auto s = scenario(2);
  const dtsim::network::FlowModel model(s);
  const CommOp op{CollectiveKind::all_reduce, 64e6, CommGroup{16, 2, 1}};
  const auto first = model.duration(op);
  CHECK(model.duration(op) == first);
  CHECK(model.simulations() == 1);
  const CommOp other{CollectiveKind::all_gather, 64e6, CommGroup{16, 2, 1}};
  CHECK(model.duration(other) > 0);
  CHECK(model.simulations() == 2);
  CHECK(dtsim::network::FlowModel(s).duration(op) == first);
  CHECK(std::string(dtsim::network::make_network_model(s)->name()) == "flow");
}

TEST_CASE("a cluster past the flow level's size limit is infeasible when the model is made") {
  // The fixture has 8 GPUs per node: 2,048 nodes are 16,384 GPUs, the limit; 2,049 nodes pass it.
  CHECK(dtsim::network::kMaxFlowGpus == 16'384);
  CHECK_NOTHROW(dtsim::network::FlowModel(scenario(2048)));
  CHECK_THROWS_WITH_AS(dtsim::network::make_network_model(scenario(2049)),
                       "too large to simulate on the flow level: 16392 GPUs (2049 nodes x 8 GPUs), over "
                       "dtsim's limit of 16384 (SimGrid's routing grows with the square of the GPUs: 5.8 GB "
                       "and over 2 minutes at the limit); use \"network\": \"analytic\"",
                       dtsim::core::InfeasibleError);
  // The analytic level has no such limit.
  auto analytic = scenario(1'000'000);
  analytic.simulation.network = dtsim::config::NetworkFidelity::analytic;
  CHECK(std::string(dtsim::network::make_network_model(analytic)->name()) == "analytic");
}

TEST_CASE("flow agrees with analytic for the tree all-reduce, all-to-all and pipeline sends") {
  // 8 nodes, NCCL's choice (tree for 1 GB): the inter-node rings carry 2 x 7/8 x 1e9 bytes per
  // node at 100e9 B/s = 17.5 ms, the intra-node phase 2 x 7/8 x 1e9 / 200e9 = 8.75 ms: 17.5 ms.
  auto s = scenario(8);
  s.cluster.network.all_reduce_algorithm = dtsim::config::AllReduceAlgorithm::automatic;
  const CommOp hier{CollectiveKind::all_reduce, 1e9, CommGroup{64, 8, 1}};
  // All-to-all over 2 nodes: each GPU sends 8/16 of 1 GB to the other node: 8 x 0.5e9 / 100e9 = 40 ms.
  const CommOp a2a{CollectiveKind::all_to_all, 1e9, CommGroup{16, 2, 1}};
  // Pipeline sends between two nodes, one per GPU (8 pairs, one NIC each): 1e9 / 12.5e9 = 80 ms.
  const CommOp p2p{CollectiveKind::send_recv, 1e9, CommGroup{2, 2, 8}};
  for (const CommOp& op : {hier, a2a, p2p}) {
    const double a = analytic_s(s, op);
    const double f = flow_s(s, op);
    MESSAGE(std::string(dtsim::graph::to_string(op.kind)), ": analytic ", a * 1e3, " ms, flow ", f * 1e3,
            " ms");
    CHECK(rel_error(f, a) < 0.05);
  }
  CHECK(analytic_s(s, hier) == doctest::Approx(17.5e-3).epsilon(0.01));
}

TEST_CASE("analytic: the divisor of the tiers a group crosses depends on its traffic pattern") {
  using dtsim::network::fabric_divisor;
  using dtsim::network::TrafficPattern;
  auto s = scenario(8);
  s.cluster.network.nodes_per_leaf = 2;
  s.cluster.network.oversubscription = 4.0;
  auto p = dtsim::network::path_params(s);
  const CommGroup four{32, 4, 1};  // nodes 0..3: two leaves, 2 of its nodes under each
  // Ring: max(1, 4 / 2) = 2; every node sending out: 4; all-to-all: 4 x (4 - 2) / (4 - 1) = 8/3.
  CHECK(fabric_divisor(four, p, TrafficPattern::ring) == doctest::Approx(2.0));
  CHECK(fabric_divisor(four, p, TrafficPattern::all_nodes) == doctest::Approx(4.0));
  CHECK(fabric_divisor(four, p, TrafficPattern::all_to_all) == doctest::Approx(8.0 / 3.0));
  // Inside one leaf: nothing crossed.
  CHECK(fabric_divisor(CommGroup{16, 2, 1}, p, TrafficPattern::all_nodes) == 1.0);
  // Nodes 4 apart (node_stride 4): each leaf holds one of its nodes: max(1, 4 / 1) = 4 for the ring.
  CHECK(fabric_divisor(CommGroup{2, 2, 8, 4}, p, TrafficPattern::ring) == doctest::Approx(4.0));
  // Pods of one leaf with a 2:1 core tier: crossing pods costs 4 x 2 / 2 = 4 for the ring.
  s.cluster.network.leaves_per_pod = 1;
  s.cluster.network.core_oversubscription = 2.0;
  p = dtsim::network::path_params(s);
  CHECK(fabric_divisor(four, p, TrafficPattern::ring) == doctest::Approx(4.0));
}

TEST_CASE("flow and analytic see the tiers crossed by strided groups and across pods") {
  // Pipeline sends between nodes 2 apart (node_stride 2) on leaves of 2 nodes at 2:1: every node of a
  // leaf sends out at once, 16 x 12.5e9 B/s of NICs over 16 x 12.5e9 / 2 of uplinks: each send at
  // 6.25e9 B/s, 1e9 bytes in 160 ms.
  auto s = scenario(4);
  s.cluster.network.nodes_per_leaf = 2;
  s.cluster.network.oversubscription = 2.0;
  const CommOp p2p{CollectiveKind::send_recv, 1e9, CommGroup{2, 2, 8, 2}};
  MESSAGE("strided sends: analytic ", analytic_s(s, p2p) * 1e3, " ms, flow ", flow_s(s, p2p) * 1e3, " ms");
  CHECK(analytic_s(s, p2p) == doctest::Approx(0.160).epsilon(0.01));
  CHECK(flow_s(s, p2p) == doctest::Approx(0.160).epsilon(0.01));
  // Pods of 2 one-node leaves, 4:1 at the core: a ring over the 4 nodes leaves each pod once per
  // channel; the pod's uplink per plane carries 2 x 12.5e9 / 4 = 6.25e9 B/s against 12.5e9 wanted:
  // twice as slow as without the core tier (analytic: max(1, 4 x 1 / 2) = 2).
  auto pods = scenario(4);
  const CommOp ring{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  const double flat_flow = flow_s(pods, ring);
  const double flat_analytic = analytic_s(pods, ring);
  pods.cluster.network.leaves_per_pod = 2;
  pods.cluster.network.core_oversubscription = 4.0;
  MESSAGE("core tier 4:1: flow ", flow_s(pods, ring) / flat_flow, ", analytic ",
          analytic_s(pods, ring) / flat_analytic);
  CHECK(flow_s(pods, ring) / flat_flow == doctest::Approx(2.0).epsilon(0.05));
  CHECK(analytic_s(pods, ring) / flat_analytic == doctest::Approx(2.0).epsilon(0.05));
}

TEST_CASE("flow job: resolved routes and phase latencies, bytes that read back the same") {
  const auto s = scenario(2);
  const dtsim::network::Topology topology(dtsim::network::topology_shape(s));
  // Two phases over the same host pair (node 0 GPU 0 to node 1 GPU 0): one route, made when first seen.
  dtsim::network::FlowPhase phase;
  phase.transfers.push_back({0, 0, 1, 0, 1e6, 0.0, 0});
  const dtsim::network::FlowJob job = dtsim::network::make_flow_job(topology, {phase, phase});
  REQUIRE(job.routes.size() == 1);
  REQUIRE(job.phases.size() == 2);
  double latency = 0.0;
  for (const std::size_t id : topology.route(0, 0, 1, 0, 0)) latency += topology.link(id).latency_s;
  CHECK(job.phase_latency_s[1] == latency);
  const dtsim::network::FlowJob back = dtsim::network::decode_flow_job(dtsim::network::encode_flow_job(job));
  CHECK(back.routes[0].links == job.routes[0].links);
  CHECK(back.phases[1][0].bytes == 1e6);
  CHECK(back.links.size() == job.links.size());
  CHECK(dtsim::network::decode_phase_times(dtsim::network::encode_phase_times({0.5, 0.25})) ==
        std::vector<double>{0.5, 0.25});
  CHECK_THROWS_AS(dtsim::network::decode_flow_job("not a job"), dtsim::core::InternalError);
}

TEST_CASE("the SimGrid helper runs from several threads at once, each in its own process") {
  // Four threads each simulate the same collective on a model of their own (no shared cache): every
  // one starts its own helper process, and all get the one deterministic answer.
  const auto s = scenario(2);
  const CommOp op{CollectiveKind::all_reduce, 32e6, CommGroup{16, 2, 1}};
  const auto expected = dtsim::network::FlowModel(s).duration(op);
  std::vector<dtsim::core::TimeNs> got(4);
  dtsim::core::parallel_for(got.size(), 4,
                            [&](std::size_t i) { got[i] = dtsim::network::FlowModel(s).duration(op); });
  for (const auto t : got) CHECK(t == expected);
}

TEST_CASE("a helper executable that is not there is an internal error saying so") {
  const char* kept = std::getenv("DTSIM_EXE");
  const std::string saved = kept != nullptr ? kept : "";
  ::setenv("DTSIM_EXE", "/nonexistent/dtsim", 1);
  const auto s = scenario(2);
  try {
    dtsim::network::FlowModel(s).duration(CommOp{CollectiveKind::all_reduce, 8e6, CommGroup{16, 2, 1}});
    FAIL("no error");
  } catch (const dtsim::core::InternalError& e) {
    CHECK(std::string(e.what()).find("DTSIM_EXE=/nonexistent/dtsim is not an executable file") !=
          std::string::npos);
  }
  if (kept != nullptr) {
    ::setenv("DTSIM_EXE", saved.c_str(), 1);
  } else {
    ::unsetenv("DTSIM_EXE");
  }
}
