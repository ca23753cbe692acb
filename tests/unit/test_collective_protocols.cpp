// NCCL protocols (network/nccl_protocol.hpp) and the tree, hierarchical and halving-doubling
// all-reduces (network/collective_cost.hpp) on the fixture's round numbers (tests/unit/scenario_fixture.hpp):
// intra 200e9 B/s, 1 us per hop (NVLink); node NICs 100e9 B/s; inter hop 4 + 1 = 5 us.
//
// Protocol hop latencies from the profile's (Simple) ones: max(min(Simple, NCCL's own), Simple - (NCCL's
// Simple - NCCL's own)) with NCCL's hwLat (us):
//   NVLink Ring LL 0.6 LL128 1.9 Simple 3.4 -> intra 1 us: LL max(0.6, 1 - 2.8) = 0.6, LL128 min(1, 1.9) = 1
//   NVLink Tree LL 0.6 LL128 1.25 Simple 4  -> LL 0.6, LL128 1
//   NET Ring LL 2.7 LL128 4 Simple 14       -> inter 5 us: LL 2.7, LL128 4
//   NET Tree LL 5 LL128 8.5 Simple 14       -> LL 5, LL128 5
// Bandwidth fractions: ring LL 0.5, LL128 0.92; tree LL (1/3.8)/0.92, LL128 0.92; LL's bus bandwidth
// capped across nodes at 39e9 B/s (2 nodes), 20.4e9 (3 or more).
// NCCL's base latency per collective (us): Tree LL 6.8, LL128 14, Simple 8.4; Ring 6.6, 14, 8.4.
// Pipelined algorithms add their fill min(2 sqrt(pace x network latency), 2 stages x 32 MiB / rate).
#include <doctest/doctest.h>

#include <cmath>

#include "network/analytic_model.hpp"
#include "network/flow_model.hpp"
#include "scenario_fixture.hpp"

using dtsim::graph::CollectiveKind;
using dtsim::graph::CommGroup;
using dtsim::graph::CommOp;
using dtsim::network::Algorithm;
using dtsim::network::Protocol;

namespace {
// Times in microseconds: doctest::Approx's tolerance has an absolute part of its epsilon (scale 1).
double us(double seconds) { return seconds * 1e6; }
double time_us(const CommOp& op, const dtsim::network::PathParams& p) {
  return us(dtsim::network::collective_time_s(op, p));
}
}  // namespace

TEST_CASE("protocol hop latency: NCCL's difference to Simple, within NCCL's own value and the profile's") {
  using dtsim::network::AlgorithmFamily;
  using dtsim::network::HopClass;
  using dtsim::network::protocol_hop_latency_s;
  // A fitted 9.89 us NVLink hop: LL 9.89 - (3.4 - 0.6) = 7.09 us; LL128 9.89 - (3.4 - 1.9) = 8.39 us.
  CHECK(us(protocol_hop_latency_s(9.89e-6, HopClass::nvlink, AlgorithmFamily::ring, Protocol::ll)) ==
        doctest::Approx(7.09));
  CHECK(us(protocol_hop_latency_s(9.89e-6, HopClass::nvlink, AlgorithmFamily::ring, Protocol::ll128)) ==
        doctest::Approx(8.39));
  // NCCL's own Simple value (3.4 us): exactly NCCL's LL and LL128 values.
  CHECK(us(protocol_hop_latency_s(3.4e-6, HopClass::nvlink, AlgorithmFamily::ring, Protocol::ll)) ==
        doctest::Approx(0.6));
  CHECK(us(protocol_hop_latency_s(3.4e-6, HopClass::nvlink, AlgorithmFamily::ring, Protocol::ll128)) ==
        doctest::Approx(1.9));
  // The fixture's 1 us hop: LL 0.6 us, LL128 no slower than Simple (1 us).
  CHECK(us(protocol_hop_latency_s(1e-6, HopClass::nvlink, AlgorithmFamily::ring, Protocol::ll)) ==
        doctest::Approx(0.6));
  CHECK(us(protocol_hop_latency_s(1e-6, HopClass::nvlink, AlgorithmFamily::ring, Protocol::ll128)) ==
        doctest::Approx(1));
  CHECK(us(protocol_hop_latency_s(5e-6, HopClass::net, AlgorithmFamily::tree, Protocol::simple)) ==
        doctest::Approx(5));
}

TEST_CASE("automatic choice: LL for tiny messages, Simple for large ones, across nodes") {
  // 32 ranks on 4 nodes (8 per node). 8 B:
  //   ring LL: 6.6 + (62 - 6) x 0.6 + 6 x 2.7 = 56.4 us; tree Simple: 8.4 + 2 (7 x 1 + 2 x 5) = 42.4 us;
  //   tree LL: 6.8 + 2 (7 x 0.6 + log2(4) x 5) = 35.2 us, the fastest; its bytes at LL's capped rate
  //   (min(100e9 x (1/3.8)/0.92 = 28.6e9, 20.4e9)): the busiest node's 2 x 8 B take 16 / 20.4e9 s, and
  //   the fill 2 sqrt(16 / 20.4e9 s x 4 hops x 5 us) = 0.2505 us.
  const CommOp tiny{CollectiveKind::all_reduce, 8, CommGroup{32, 4, 1}};
  const auto small = dtsim::network::collective_cost(tiny, dtsim::testing::fixture_path());
  CHECK(small.algorithm == Algorithm::tree);
  CHECK(small.protocol == Protocol::ll);
  const double pace_s = 16 / 20.4e9;
  CHECK(us(small.time_s) == doctest::Approx(35.2 + us(pace_s + 2 * std::sqrt(pace_s * 20e-6))).epsilon(1e-6));
  // 1 GB: the tree's busiest node sends 2 x 1e9 B at 100e9: 20 ms (intra 2 x 7/8 x 1e9 / 200e9 = 8.75 ms)
  // plus its fill 2 sqrt(20 ms x 20 us) = 1.265 ms; the ring Simple moves 2 x 31/32 x 1e9 B at
  // min(200e9, 100e9): 19.375 ms + 8.4 + 56 x 1 + 6 x 5 = 94.4 us, the faster (LL128: / 0.92).
  const CommOp large{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  const auto big = dtsim::network::collective_cost(large, dtsim::testing::fixture_path());
  CHECK(big.algorithm == Algorithm::ring);
  CHECK(big.protocol == Protocol::simple);
  CHECK(us(big.time_s) == doctest::Approx(us(19.375e-3 + 94.4e-6)));
}

TEST_CASE("automatic choice inside a node: LL for tiny messages, Simple for large ones") {
  // 8 ranks, 8 B: ring LL 6.6 + 14 x 0.6 us = 15 us + 2 x 7/8 x 8 / (0.5 x 200e9) = 0.14 ns (no cap on
  // one node); Simple 8.4 + 14 = 22.4 us.
  const CommOp tiny{CollectiveKind::all_reduce, 8, CommGroup{8, 1, 1}};
  const auto small = dtsim::network::collective_cost(tiny, dtsim::testing::fixture_path());
  CHECK(small.protocol == Protocol::ll);
  CHECK(us(small.time_s) == doctest::Approx(15.0 + 0.14e-3));
  const CommOp large{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_cost(large, dtsim::testing::fixture_path()).protocol == Protocol::simple);
  // All-gather of 8 B: ring LL 6.6 + 7 x 0.6 us = 10.8 us.
  const CommOp ag{CollectiveKind::all_gather, 8, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_cost(ag, dtsim::testing::fixture_path()).protocol == Protocol::ll);
  CHECK(time_us(ag, dtsim::testing::fixture_path()) == doctest::Approx(10.8).epsilon(1e-4));
}

TEST_CASE("forced protocols: bandwidth fraction and hop latency") {
  auto p = dtsim::testing::fixture_path();
  const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  // Ring LL: 2 x 7/8 x 1e9 / (0.5 x 200e9) = 17.5 ms + 6.6 + 14 x 0.6 us.
  p.forced_protocol = Protocol::ll;
  CHECK(time_us(op, p) == doctest::Approx(us(17.5e-3 + 15e-6)));
  // Ring LL128: 8.75 ms / 0.92 + 14 + 14 x 1 us.
  p.forced_protocol = Protocol::ll128;
  CHECK(time_us(op, p) == doctest::Approx(us(8.75e-3 / 0.92 + 28e-6)));
  // Without NVLink in the node LL128 does not apply: Simple, 8.75 ms + 8.4 + 14 us.
  p.ll128 = false;
  CHECK(dtsim::network::collective_cost(op, p).protocol == Protocol::simple);
  CHECK(time_us(op, p) == doctest::Approx(us(8.75e-3 + 22.4e-6)));
  // NVLS runs Simple only, with no base latency: 2 x 7/8 x 1e9 / 400e9 + 1 us.
  p.forced_protocol = Protocol::ll;
  p.nvls_bytes_per_s = 400e9;
  p.forced_all_reduce = Algorithm::nvls;
  const auto nvls = dtsim::network::collective_cost(op, p);
  CHECK(nvls.algorithm == Algorithm::nvls);
  CHECK(nvls.protocol == Protocol::simple);
  CHECK(us(nvls.time_s) == doctest::Approx(us(4.375e-3 + 1e-6)));
}

TEST_CASE("tree, hierarchical and halving-doubling all-reduces as forced") {
  auto p = dtsim::testing::fixture_path();
  p.forced_protocol = Protocol::simple;
  const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  // Tree: the busiest node sends 2 x 1e9 B: max(8.75 ms, 20 ms) + fill 2 sqrt(20 ms x 4 x 5 us)
  // + 8.4 + 2 (7 x 1 + log2(4) x 5) us.
  p.forced_all_reduce = Algorithm::tree;
  CHECK(time_us(op, p) == doctest::Approx(us(20e-3 + 2 * std::sqrt(20e-3 * 20e-6) + 42.4e-6)));
  // Hierarchical: a ring across nodes, 2 x 3/4 x 1e9 B: 15 ms; fill 2 sqrt(15 ms x 6 x 5 us); latency
  // 8.4 + 2 (7 x 1 + 3 x 5) us = 52.4 us.
  p.forced_all_reduce = Algorithm::hierarchical;
  CHECK(dtsim::network::collective_cost(op, p).algorithm == Algorithm::hierarchical);
  CHECK(time_us(op, p) == doctest::Approx(us(15e-3 + 2 * std::sqrt(15e-3 * 30e-6) + 52.4e-6)));
  // Halving-doubling: phases one after another: 2 x 7/8 x 1e9 / 200e9 = 8.75 ms inside the node,
  // 2 x 3/4 x 1e9 / 100e9 = 15 ms across; latency 8.4 + 2 (log2(8) x 1 + log2(4) x 5) us = 34.4 us.
  p.forced_all_reduce = Algorithm::halving_doubling;
  CHECK(dtsim::network::collective_cost(op, p).algorithm == Algorithm::halving_doubling);
  CHECK(time_us(op, p) == doctest::Approx(us(23.75e-3 + 34.4e-6)));
  // Not a power of two (24 ranks on 3 nodes): the ring.
  const CommOp odd{CollectiveKind::all_reduce, 1e9, CommGroup{24, 3, 1}};
  CHECK(dtsim::network::collective_cost(odd, p).algorithm == Algorithm::ring);
  // Tree inside one node: the ring.
  p.forced_all_reduce = Algorithm::tree;
  const CommOp inside{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_cost(inside, p).algorithm == Algorithm::ring);
}

TEST_CASE("pipeline fill: the classical pipelined time below the chunk cap, constant above it") {
  using dtsim::network::pipeline_fill_s;
  // Below the cap: 2 sqrt(pace x latency) = 2 sqrt(10 ms x 10 us) = 632.46 us; (sqrt(L) + sqrt(pace))^2
  // = pace + L + fill.
  CHECK(us(pipeline_fill_s(10e-3, 10e-6, 2, 1.0)) == doctest::Approx(632.456).epsilon(1e-5));
  // Capped at 2 x stages x one chunk's time: 2 x 2 x 100 us = 400 us.
  CHECK(us(pipeline_fill_s(10e-3, 10e-6, 2, 100e-6)) == doctest::Approx(400.0));
  CHECK(pipeline_fill_s(0.0, 10e-6, 2, 1.0) == 0.0);
  // The tree's busiest node: S with two nodes, 2S with more; the hierarchical ring 2(N-1)/N S.
  CHECK(dtsim::network::tree_inter_bytes(Algorithm::tree, 2, 1e9) == 1e9);
  CHECK(dtsim::network::tree_inter_bytes(Algorithm::tree, 8, 1e9) == 2e9);
  CHECK(dtsim::network::tree_inter_bytes(Algorithm::hierarchical, 4, 1e9) == 1.5e9);
}

TEST_CASE("flow level: same algorithm and protocol as the analytic model") {
  auto s = dtsim::testing::fixture_scenario();
  s.cluster.nodes = 4;
  s.simulation.network = dtsim::config::NetworkFidelity::flow;
  const auto analytic_us = [&](const CommOp& op) {
    return dtsim::network::collective_time_s(op, dtsim::network::path_params(s)) * 1e6;
  };
  const auto flow_us = [&](const CommOp& op) {
    return static_cast<double>(dtsim::network::FlowModel(s).duration(op)) * 1e-3;
  };
  const CommOp big{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  const CommOp tiny{CollectiveKind::all_reduce, 8, CommGroup{32, 4, 1}};
  // Large messages agree (bandwidth bound): halving-doubling 23.75 ms + 34.4 us, and the ring of the
  // automatic choice, 19.375 ms + 94.4 us (see above).
  s.cluster.network.all_reduce_algorithm = dtsim::config::AllReduceAlgorithm::halving_doubling;
  CHECK(flow_us(big) == doctest::Approx(analytic_us(big)).epsilon(0.01));
  s.cluster.network.all_reduce_algorithm = dtsim::config::AllReduceAlgorithm::automatic;
  CHECK(flow_us(big) == doctest::Approx(analytic_us(big)).epsilon(0.01));
  // Tiny messages: tree LL in both. The flow level counts a ring phase's steps as NCCL does, those inside
  // a node at the intra-node route (1 us, scaled 0.6/1) and those across nodes at NCCL's network hop
  // (the route, 1 + 5 us through the GPU's link and the NIC, scaled 5/6): 6.8 + 14 x 0.6 + 4 x 5 =
  // 35.2 us and the fill of its pace (SimGrid's 8 bytes: a fraction of a microsecond, without LL's
  // rate cap, which the flow level does not apply).
  CHECK(flow_us(tiny) == doctest::Approx(analytic_us(tiny)).epsilon(0.01));
  // Halving-doubling LL: its phases wait for their slowest route, the GPU's 1 us hop out included:
  // 6.6 + distances 1, 2, 4 inside the node, twice, 6 x 1 us x 0.6 = 3.6 us; distances 8, 16 across,
  // twice, 4 x 6 us x (2.7/5) = 12.96 us: 23.16 us (analytic 6.6 + 14.4 = 21 us).
  s.cluster.network.all_reduce_algorithm = dtsim::config::AllReduceAlgorithm::halving_doubling;
  CHECK(analytic_us(tiny) == doctest::Approx(21.0).epsilon(1e-4));
  CHECK(flow_us(tiny) == doctest::Approx(23.16).epsilon(1e-4));
}
