// Analytic collective costs (network/collective_cost.hpp) on the fixture's round numbers:
// intra 200e9 B/s and 1 us per step; node NICs 100e9 B/s; inter step 4 + 1 = 5 us.
#include <doctest/doctest.h>

#include <cmath>

#include "network/analytic_model.hpp"
#include "scenario_fixture.hpp"

using dtsim::graph::CollectiveKind;
using dtsim::graph::CommGroup;
using dtsim::graph::CommOp;

TEST_CASE("path parameters come from node, NICs and fabric") {
  const auto p = dtsim::testing::fixture_path();
  CHECK(p.intra_bytes_per_s == doctest::Approx(200e9));
  CHECK(p.node_inter_bytes_per_s == doctest::Approx(100e9));
  CHECK(p.inter_latency_s == doctest::Approx(5e-6));
}

TEST_CASE("ring all-reduce inside a node: 2(n-1)/n S / B + 2(n-1) alpha") {
  // n = 8, S = 1e9: 2*7/8*1e9/200e9 = 8.75 ms; latency 14 * 1 us.
  const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_time_s(op, dtsim::testing::fixture_path()) ==
        doctest::Approx(8.75e-3 + 14e-6));
}

TEST_CASE("all-reduce across nodes: NCCL's tree beats the ring on two nodes, the ring on more") {
  // 16 ranks on 2 nodes (8 per node, one group per node), Simple:
  // Ring: busbw = min(200e9, 100e9/1) = 100e9: 2*15/16*1e9/100e9 = 18.75 ms + 8.4 + 28 x 1 + 2 x 5 us.
  // Tree: each node sends S = 1e9 B across: max(intra 2*7/8*1e9/200e9 = 8.75 ms, 10 ms) + fill
  // 2 sqrt(10 ms x 2 x 5 us) + latency 8.4 + 2 (7 x 1 us + log2(2) x 5 us) = 32.4 us: the faster one.
  const CommOp two{CollectiveKind::all_reduce, 1e9, CommGroup{16, 2, 1}};
  const auto cost = dtsim::network::collective_cost(two, dtsim::testing::fixture_path());
  CHECK(cost.algorithm == dtsim::network::Algorithm::tree);
  CHECK(cost.time_s * 1e6 == doctest::Approx(1e6 * (10e-3 + 2 * std::sqrt(10e-3 * 10e-6) + 32.4e-6)));
  // 32 ranks on 4 nodes: the tree's busiest node sends 2S (20 ms); the ring's 2*31/32*1e9/100e9 =
  // 19.375 ms + 8.4 + 56 x 1 + 6 x 5 us wins.
  const CommOp four{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  const auto ring = dtsim::network::collective_cost(four, dtsim::testing::fixture_path());
  CHECK(ring.algorithm == dtsim::network::Algorithm::ring);
  CHECK(ring.time_s * 1e6 == doctest::Approx(1e6 * (19.375e-3 + 94.4e-6)));
  // Same group but 8 such groups per node (one rank per node each): 100e9 / 8 per group.
  const CommOp rail{CollectiveKind::all_reduce, 1e9, CommGroup{4, 4, 8}};
  // 2*3/4*1e9/12.5e9 = 120 ms; 6 steps all inter-node: 8.4 + 30 us.
  CHECK(dtsim::network::collective_time_s(rail, dtsim::testing::fixture_path()) * 1e6 ==
        doctest::Approx(1e6 * (0.120 + 38.4e-6)));
}

TEST_CASE("all-gather and reduce-scatter move half an all-reduce") {
  const CommOp ag{CollectiveKind::all_gather, 1e9, CommGroup{8, 1, 1}};
  const CommOp rs{CollectiveKind::reduce_scatter, 1e9, CommGroup{8, 1, 1}};
  // 7/8 * 1e9 / 200e9 + 8.4 (NCCL's base) + 7 * 1 us
  CHECK(dtsim::network::collective_time_s(ag, dtsim::testing::fixture_path()) * 1e6 ==
        doctest::Approx(1e6 * (4.375e-3 + 15.4e-6)));
  CHECK(dtsim::network::collective_time_s(rs, dtsim::testing::fixture_path()) * 1e6 ==
        doctest::Approx(1e6 * (4.375e-3 + 15.4e-6)));
}

TEST_CASE("point-to-point across nodes uses the rank's share of the NICs") {
  // 8 senders per node share 100e9: 12.5e9 each; 100 MB -> 8 ms + 5 us.
  const CommOp op{CollectiveKind::send_recv, 100e6, CommGroup{2, 2, 8}};
  CHECK(dtsim::network::collective_time_s(op, dtsim::testing::fixture_path()) ==
        doctest::Approx(8e-3 + 5e-6));
}

TEST_CASE("a group of one costs nothing") {
  const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{1, 1, 1}};
  CHECK(dtsim::network::collective_time_s(op, dtsim::testing::fixture_path()) == 0.0);
}

TEST_CASE("a forced all-reduce algorithm is used where it applies, else the ring") {
  auto p = dtsim::testing::fixture_path();
  p.forced_all_reduce = dtsim::network::Algorithm::ring;
  const CommOp across{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  // Ring across 4 nodes (see above): 19.375 ms + 56 x 1 us + 6 x 5 us.
  CHECK(dtsim::network::collective_cost(across, p).algorithm == dtsim::network::Algorithm::ring);
  CHECK(dtsim::network::collective_time_s(across, p) == doctest::Approx(19.375e-3 + 56e-6 + 30e-6));
  p.forced_all_reduce = dtsim::network::Algorithm::hierarchical;
  const CommOp inside{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_cost(inside, p).algorithm == dtsim::network::Algorithm::ring);
}

TEST_CASE("oversubscription slows traffic leaving the node by its ratio") {
  // 2:1 oversubscription halves the node's 100e9 B/s for the ring all-reduce across 4 nodes: bus
  // bandwidth min(200e9, 50e9), 2*31/32*1e9/50e9 = 38.75 ms (19.375 ms without) + 8.4 + 56 x 1 + 6 x 5 us
  // (the tree: its busiest node's 2e9 B at 50e9 = 40 ms and more); intra-node traffic is unchanged.
  auto s = dtsim::testing::fixture_scenario();
  s.cluster.network.oversubscription = 2.0;
  const auto p = dtsim::network::path_params(s);
  CHECK(p.node_inter_bytes_per_s == doctest::Approx(100e9));  // the NICs; the tier divides per group
  CHECK(dtsim::network::fabric_divisor(CommGroup{32, 4, 1}, p, dtsim::network::TrafficPattern::ring) == 2.0);
  const CommOp across{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  CHECK(dtsim::network::collective_time_s(across, p) * 1e6 == doctest::Approx(1e6 * (38.75e-3 + 94.4e-6)));
  const CommOp inside{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_time_s(inside, p) * 1e6 == doctest::Approx(1e6 * (8.75e-3 + 22.4e-6)));
}
