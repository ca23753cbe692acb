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
// Bandwidth fractions: ring LL 0.5, LL128 0.92; tree LL (1/3.8)/0.92, LL128 0.92.
#include <doctest/doctest.h>

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
  //   ring LL: (62 - 6) x 0.6 + 6 x 2.7 = 49.8 us; tree Simple: 2 (7 x 1 + 2 x 5) = 34 us;
  //   tree LL: 2 (7 x 0.6 + log2(4) x 5) = 28.4 us (+ bytes: negligible): the fastest.
  const CommOp tiny{CollectiveKind::all_reduce, 8, CommGroup{32, 4, 1}};
  const auto small = dtsim::network::collective_cost(tiny, dtsim::testing::fixture_path());
  CHECK(small.algorithm == Algorithm::tree);
  CHECK(small.protocol == Protocol::ll);
  CHECK(us(small.time_s) == doctest::Approx(28.4).epsilon(1e-4));
  // 1 GB: tree Simple max(2 x 7/8 x 1e9 / 200e9, 2 x 3/4 x 1e9 / 100e9) = 15 ms + 34 us; LL128 saves
  // no latency here (2 (7 x 1 + 2 x 5) = 34 us) and moves at 0.92 of the bandwidth.
  const CommOp large{CollectiveKind::all_reduce, 1e9, CommGroup{32, 4, 1}};
  const auto big = dtsim::network::collective_cost(large, dtsim::testing::fixture_path());
  CHECK(big.algorithm == Algorithm::tree);
  CHECK(big.protocol == Protocol::simple);
  CHECK(us(big.time_s) == doctest::Approx(us(15e-3 + 34e-6)));
}

TEST_CASE("automatic choice inside a node: LL for tiny messages, Simple for large ones") {
  // 8 ranks, 8 B: ring LL 14 x 0.6 us = 8.4 us + 2 x 7/8 x 8 / (0.5 x 200e9) = 0.14 ns; Simple 14 us.
  const CommOp tiny{CollectiveKind::all_reduce, 8, CommGroup{8, 1, 1}};
  const auto small = dtsim::network::collective_cost(tiny, dtsim::testing::fixture_path());
  CHECK(small.protocol == Protocol::ll);
  CHECK(us(small.time_s) == doctest::Approx(8.4 + 0.14e-3));
  const CommOp large{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_cost(large, dtsim::testing::fixture_path()).protocol == Protocol::simple);
  // All-gather of 8 B: ring LL 7 x 0.6 us = 4.2 us.
  const CommOp ag{CollectiveKind::all_gather, 8, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_cost(ag, dtsim::testing::fixture_path()).protocol == Protocol::ll);
  CHECK(time_us(ag, dtsim::testing::fixture_path()) == doctest::Approx(4.2).epsilon(1e-4));
}

TEST_CASE("forced protocols: bandwidth fraction and hop latency") {
  auto p = dtsim::testing::fixture_path();
  const CommOp op{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  // Ring LL: 2 x 7/8 x 1e9 / (0.5 x 200e9) = 17.5 ms + 14 x 0.6 us.
  p.forced_protocol = Protocol::ll;
  CHECK(time_us(op, p) == doctest::Approx(us(17.5e-3 + 8.4e-6)));
  // Ring LL128: 8.75 ms / 0.92 + 14 x 1 us.
  p.forced_protocol = Protocol::ll128;
  CHECK(time_us(op, p) == doctest::Approx(us(8.75e-3 / 0.92 + 14e-6)));
  // Without NVLink in the node LL128 does not apply: Simple, 8.75 ms + 14 us.
  p.ll128 = false;
  CHECK(dtsim::network::collective_cost(op, p).protocol == Protocol::simple);
  CHECK(time_us(op, p) == doctest::Approx(us(8.75e-3 + 14e-6)));
  // NVLS runs Simple only: 2 x 7/8 x 1e9 / 400e9 + 1 us.
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
  // Tree: max(8.75 ms, 15 ms) + 2 (7 x 1 + log2(4) x 5) us = 15 ms + 34 us.
  p.forced_all_reduce = Algorithm::tree;
  CHECK(time_us(op, p) == doctest::Approx(us(15e-3 + 34e-6)));
  // Hierarchical: same bytes, ring latency across nodes 2 (7 x 1 + 3 x 5) us = 44 us.
  p.forced_all_reduce = Algorithm::hierarchical;
  CHECK(dtsim::network::collective_cost(op, p).algorithm == Algorithm::hierarchical);
  CHECK(time_us(op, p) == doctest::Approx(us(15e-3 + 44e-6)));
  // Halving-doubling: phases one after another: 2 x 7/8 x 1e9 / 200e9 = 8.75 ms inside the node,
  // 2 x 3/4 x 1e9 / 100e9 = 15 ms across; latency 2 (log2(8) x 1 + log2(4) x 5) us = 26 us.
  p.forced_all_reduce = Algorithm::halving_doubling;
  CHECK(dtsim::network::collective_cost(op, p).algorithm == Algorithm::halving_doubling);
  CHECK(time_us(op, p) == doctest::Approx(us(23.75e-3 + 26e-6)));
  // Not a power of two (24 ranks on 3 nodes): the ring.
  const CommOp odd{CollectiveKind::all_reduce, 1e9, CommGroup{24, 3, 1}};
  CHECK(dtsim::network::collective_cost(odd, p).algorithm == Algorithm::ring);
  // Tree inside one node: the ring.
  p.forced_all_reduce = Algorithm::tree;
  const CommOp inside{CollectiveKind::all_reduce, 1e9, CommGroup{8, 1, 1}};
  CHECK(dtsim::network::collective_cost(inside, p).algorithm == Algorithm::ring);
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
  // Large messages agree (bandwidth bound): halving-doubling 23.75 ms + 26 us, tree 15.034 ms (see above).
  s.cluster.network.all_reduce_algorithm = dtsim::config::AllReduceAlgorithm::halving_doubling;
  CHECK(flow_us(big) == doctest::Approx(analytic_us(big)).epsilon(0.01));
  s.cluster.network.all_reduce_algorithm = dtsim::config::AllReduceAlgorithm::automatic;
  CHECK(flow_us(big) == doctest::Approx(analytic_us(big)).epsilon(0.01));
  // Tiny messages: LL in both. The flow level's route across nodes also holds the GPU's 1 us hop out to
  // its node switch (6 us where the analytic inter-node hop is 5 us), scaled by the protocol's hop
  // latency over the profile's (nccl_protocol.hpp):
  //   tree LL: chain 14 x 0.6 us = 8.4 us + 2 log2(4) = 4 tree hops x 6 us x (5/5) = 24 us: 32.4 us
  //            (analytic 28.4 us);
  //   halving-doubling LL: distances 1, 2, 4 inside the node, twice, 6 x 1 us x 0.6 = 3.6 us; distances
  //            8, 16 across, twice, 4 x 6 us x (2.7/5) = 12.96 us: 16.56 us (analytic 14.4 us).
  CHECK(analytic_us(tiny) == doctest::Approx(28.4).epsilon(1e-4));
  CHECK(flow_us(tiny) == doctest::Approx(32.4));
  s.cluster.network.all_reduce_algorithm = dtsim::config::AllReduceAlgorithm::halving_doubling;
  CHECK(analytic_us(tiny) == doctest::Approx(14.4).epsilon(1e-4));
  CHECK(flow_us(tiny) == doctest::Approx(16.56));
}
