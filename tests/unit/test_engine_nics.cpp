// The engine's shared NICs (engine/simulate.hpp, "Shared NICs"): communication tasks whose groups span
// nodes share their rank's NICs equally (processor sharing), re-rated at every start and end; tasks
// inside a node do not. The fake network's op of B bytes takes B ns alone (engine_fixture.hpp); the last
// case checks the sharing against the SimGrid flow level, the reference for contention.
#include <doctest/doctest.h>

#include "engine_fixture.hpp"
#include "network/flow_model.hpp"
#include "network/flow_plan.hpp"
#include "network/simgrid_flows.hpp"
#include "network/topology.hpp"
#include "scenario_fixture.hpp"

using namespace dtsim::testing::engine_fixture;

namespace {

// An all-reduce of `ns` alone, over a group of `nodes` nodes.
graph::Op across(double ns, std::int64_t nodes = 2) {
  graph::CommOp op;
  op.bytes = ns;
  op.group = graph::CommGroup{2 * nodes, nodes, 1};
  return op;
}

}  // namespace

TEST_CASE("engine: two all-reduces through one rank's NICs each take twice as long as alone") {
  // Rank 0: A (100 ns alone) on its data stream and B (100) on its pipeline stream, both from 0, both
  // across nodes: each at 1/2, both end at 200 (the sum of their work, 200 ns of NIC time).
  Models m;
  graph::TaskGraph g(1);
  const auto data = g.add_stream(0, StreamKind::data_comm);
  const auto pipe = g.add_stream(0, StreamKind::pipeline_send);
  const TaskId a = add(g, data, across(100), Category::data_comm, "A");
  const TaskId b = add(g, pipe, across(100), Category::pipeline_comm, "B");
  const auto r = run(g, m);
  CHECK(span_of(r, a).end == 200);
  CHECK(span_of(r, b).end == 200);
  CHECK(r.makespan == 200);
  CHECK(total(r.ranks[0]) == 200);
}

TEST_CASE("engine: a transfer that starts later slows the running one only while both run") {
  // A (100) from 0; Z (50, inside the node, no NICs) on the pipeline stream, then B (100) across
  // nodes from 50. A: 50 ns of work alone, then shares: its other 50 take 100, it ends at 150. B: 50 of
  // work by 150, then alone: it ends at 200. A compute-stream-free rank: makespan 200.
  Models m;
  graph::TaskGraph g(1);
  const auto data = g.add_stream(0, StreamKind::data_comm);
  const auto pipe = g.add_stream(0, StreamKind::pipeline_send);
  const TaskId a = add(g, data, across(100), Category::data_comm, "A");
  const TaskId z = add(g, pipe, comm(50), Category::pipeline_comm, "Z");
  const TaskId b = add(g, pipe, across(100), Category::pipeline_comm, "B", {z});
  const auto r = run(g, m);
  CHECK(span_of(r, z).end == 50);
  CHECK(span_of(r, a).end == 150);
  CHECK(span_of(r, b).start == 50);
  CHECK(span_of(r, b).end == 200);
}

TEST_CASE("engine: transfers inside a node and on other ranks do not share the NICs") {
  // A (100) across nodes on rank 0; I (100) inside one node on rank 0's other stream; C (100) across
  // nodes on rank 1: all end at 100.
  Models m;
  graph::TaskGraph g(2);
  const auto data0 = g.add_stream(0, StreamKind::data_comm);
  const auto tensor0 = g.add_stream(0, StreamKind::tensor_comm);
  const auto data1 = g.add_stream(1, StreamKind::data_comm);
  const TaskId a = add(g, data0, across(100), Category::data_comm, "A");
  const TaskId i = add(g, tensor0, comm(100), Category::tensor_comm, "I");
  const TaskId c = add(g, data1, across(100), Category::data_comm, "C");
  const auto r = run(g, m);
  CHECK(span_of(r, a).end == 100);
  CHECK(span_of(r, i).end == 100);
  CHECK(span_of(r, c).end == 100);
}

TEST_CASE("engine: a gang task shares the NICs of every member rank") {
  // Gang G (100, across nodes) on the data streams of ranks 0 and 1; P (60, across nodes) on rank 1's
  // pipeline stream from 0. Both share rank 1's NICs: G's share is the most on any member (2). By 120
  // each did 60 of work; P ends at 120, G runs its last 40 alone: it ends at 160. Rank 0's books count G
  // for 160 ns.
  Models m;
  graph::TaskGraph g(2);
  const auto data0 = g.add_stream(0, StreamKind::data_comm);
  const auto data1 = g.add_stream(1, StreamKind::data_comm);
  const auto pipe1 = g.add_stream(1, StreamKind::pipeline_send);
  const std::vector<graph::StreamId> members{data0, data1};
  const TaskId gang = g.add_gang_task(
      graph::Task{g.add_op(across(100)), 0, Category::data_comm, g.add_label("G"), -1}, members);
  const TaskId p = add(g, pipe1, across(60), Category::pipeline_comm, "P");
  const auto r = run(g, m);
  CHECK(span_of(r, p).end == 120);
  CHECK(span_of(r, gang).end == 160);
  CHECK(exposed(r.ranks[0], Category::data_comm) == 160);
  CHECK(total(r.ranks[1]) == r.makespan);
}

TEST_CASE("engine: its shared NICs against the flow level's two transfers through one NIC") {
  // The reference (SimGrid, max-min fair sharing): on two nodes with one NIC each, one 1 GB transfer from
  // GPU 0 of node 0 to GPU 0 of node 1 alone, then beside a second one from GPU 1 to GPU 1 through the
  // same NICs: the two take twice as long as one. The engine, costing each send with the flow level
  // alone and sharing the rank's NICs, ends both at twice that: within 10% of the reference.
  auto s = dtsim::testing::fixture_scenario();
  s.cluster.nodes = 2;
  s.cluster.network.nics_per_node = 1;
  s.simulation.network = dtsim::config::NetworkFidelity::flow;
  const dtsim::network::Topology topology(dtsim::network::topology_shape(s));
  dtsim::network::FlowPhase one;
  one.transfers.push_back({0, 0, 1, 0, 1e9, 0.0, 0});
  dtsim::network::FlowPhase two = one;
  two.transfers.push_back({0, 1, 1, 1, 1e9, 0.0, 0});
  const auto alone = dtsim::network::simulate_phases(topology, {one});
  const auto together = dtsim::network::simulate_phases(topology, {two});
  CHECK(together[0].transfer_s / alone[0].transfer_s == doctest::Approx(2.0).epsilon(0.02));

  const dtsim::network::FlowModel flow(s);
  graph::CommOp send;
  send.kind = graph::CollectiveKind::send_recv;
  send.bytes = 1e9;
  send.group = graph::CommGroup{2, 2, 1};
  const compute::ComputeModel compute(s.gpu, config::Precision::bf16);
  graph::TaskGraph g(1);
  const auto data = g.add_stream(0, StreamKind::data_comm);
  const auto pipe = g.add_stream(0, StreamKind::pipeline_send);
  const TaskId a = add(g, data, send, Category::data_comm, "A");
  const TaskId b = add(g, pipe, send, Category::pipeline_comm, "B");
  g.finalize();
  const auto r = engine::simulate(g, compute, flow, engine::EngineOptions{true, 1.0, 0.0});
  const double reference_s = together[0].transfer_s + together[0].latency_s;
  CHECK(static_cast<double>(span_of(r, a).end) * 1e-9 == doctest::Approx(reference_s).epsilon(0.10));
  CHECK(span_of(r, b).end == span_of(r, a).end);
}
