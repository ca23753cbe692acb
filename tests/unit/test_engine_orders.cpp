// The engine's streams that are not in program order (graph::StreamOrder), fixed durations and
// cut-through tasks (engine/simulate.hpp). Expected times follow from the rules in the comments.
#include <doctest/doctest.h>

#include "engine_fixture.hpp"

using namespace dtsim::testing::engine_fixture;
using dtsim::graph::FixedOp;
using dtsim::graph::StreamOrder;

TEST_CASE("engine orders: an arrival-order stream serves its tasks as they become ready") {
  // Rank 0's compute stream: A(30) then B(10). Port (arrival order): P1 waits for A, P2 for B, P3
  // for nothing; added P1, P2, P3. P3 is ready at 0: [0, 5). B's... B runs after A in program order:
  // A [0,30), B [30,40). P1 ready at 30: [30, 50); P2 ready at 40, waits for P1: [50, 70).
  // In program order P3 would have waited for P1 and P2.
  Models m;
  graph::TaskGraph g(2);
  const auto compute = g.add_stream(0, StreamKind::compute);
  const auto port = g.add_stream(1, StreamKind::data_comm, StreamOrder::arrival);
  const TaskId a = add(g, compute, FixedOp{30}, Category::forward, "A");
  const TaskId b = add(g, compute, FixedOp{10}, Category::forward, "B");
  const TaskId p1 = add(g, port, FixedOp{20}, Category::data_comm, "P1", {a});
  const TaskId p2 = add(g, port, FixedOp{20}, Category::data_comm, "P2", {b});
  const TaskId p3 = add(g, port, FixedOp{5}, Category::data_comm, "P3");
  const auto r = run(g, m);
  CHECK(span_of(r, p3).start == 0);
  CHECK(span_of(r, p3).end == 5);
  CHECK(span_of(r, p1).start == 30);
  CHECK(span_of(r, p2).start == 50);
  CHECK(r.makespan == 70);
  // Rank 1 (the port) was busy 5 + 20 + 20 and idle 25 of 70.
  CHECK(exposed(r.ranks[1], Category::data_comm) == 45);
  CHECK(total(r.ranks[1]) == 70);
}

TEST_CASE("engine orders: tasks ready at one instant queue in the order of their release") {
  // X(10) releases Q2 then Q1 (dependencies added in that order): Q2 [10, 14), Q1 [14, 17).
  Models m;
  graph::TaskGraph g(1);
  const auto compute = g.add_stream(0, StreamKind::compute);
  const auto port = g.add_stream(0, StreamKind::data_comm, StreamOrder::arrival);
  const TaskId x = add(g, compute, FixedOp{10}, Category::forward, "X");
  const TaskId q1 = add(g, port, FixedOp{3}, Category::data_comm, "Q1");
  const TaskId q2 = add(g, port, FixedOp{4}, Category::data_comm, "Q2");
  g.add_dependency(x, q2);
  g.add_dependency(x, q1);
  const auto r = run(g, m);
  CHECK(span_of(r, q2).start == 10);
  CHECK(span_of(r, q1).start == 14);
  CHECK(r.makespan == 17);
}

TEST_CASE("engine orders: a concurrent stream runs every ready task at once and counts in no books") {
  // Three delays of 7, 9, 4 ns, all ready at 0, end at 7, 9, 4; Z on the compute stream waits for
  // all three: [9, 12). The rank's books: busy 3, idle 9 (delays hold nothing).
  Models m;
  graph::TaskGraph g(1);
  const auto compute = g.add_stream(0, StreamKind::compute);
  const auto wire = g.add_stream(0, StreamKind::data_comm, StreamOrder::concurrent);
  const TaskId d1 = add(g, wire, FixedOp{7}, Category::data_comm, "D1");
  const TaskId d2 = add(g, wire, FixedOp{9}, Category::data_comm, "D2");
  const TaskId d3 = add(g, wire, FixedOp{4}, Category::data_comm, "D3");
  const TaskId z = add(g, compute, FixedOp{3}, Category::forward, "Z", {d1, d2, d3});
  const auto r = run(g, m);
  CHECK(span_of(r, d1).end == 7);
  CHECK(span_of(r, d2).start == 0);
  CHECK(span_of(r, d3).end == 4);
  CHECK(span_of(r, z).start == 9);
  CHECK(r.makespan == 12);
  CHECK(r.events == 4);
  CHECK(busy(r.ranks[0], Category::forward) == 3);
  CHECK(r.ranks[0].idle_ns == 9);
}

TEST_CASE("engine orders: a cut-through task releases its dependants when it starts") {
  // Egress (arrival) runs E1(10) then E2(10); each transfer's ingress task I waits for its E to
  // start: E1 [0,10), I1 [0,10); E2 [10,20), I2 [10,20). Without cut-through I2 would end at 30.
  // A third transfer's ingress I3 shares I1's port (arrival): it waits for I1 although its egress E3
  // (another port) started at 0: I3 [10, 25).
  Models m;
  graph::TaskGraph g(3);
  const auto egress = g.add_stream(0, StreamKind::data_comm, StreamOrder::arrival);
  const auto ingress_a = g.add_stream(1, StreamKind::data_comm, StreamOrder::arrival);
  const auto ingress_b = g.add_stream(1, StreamKind::data_comm, StreamOrder::arrival);
  const auto egress_c = g.add_stream(2, StreamKind::data_comm, StreamOrder::arrival);
  const TaskId e1 = add(g, egress, FixedOp{10}, Category::data_comm, "E1");
  const TaskId e2 = add(g, egress, FixedOp{10}, Category::data_comm, "E2");
  const TaskId e3 = add(g, egress_c, FixedOp{15}, Category::data_comm, "E3");
  const TaskId i1 = add(g, ingress_a, FixedOp{10}, Category::data_comm, "I1", {e1});
  const TaskId i2 = add(g, ingress_b, FixedOp{10}, Category::data_comm, "I2", {e2});
  const TaskId i3 = add(g, ingress_a, FixedOp{15}, Category::data_comm, "I3", {e3});
  for (const TaskId t : {e1, e2, e3}) g.add_cut_through(t);
  const auto r = run(g, m);
  CHECK(span_of(r, i1).start == 0);
  CHECK(span_of(r, e2).start == 10);
  CHECK(span_of(r, i2).start == 10);
  CHECK(span_of(r, i2).end == 20);
  CHECK(span_of(r, i3).start == 10);
  CHECK(span_of(r, i3).end == 25);
  CHECK(r.makespan == 25);
}

TEST_CASE("engine orders: misuse of the orders is an internal error") {
  Models m;
  SUBCASE("a gang on an arrival-order stream") {
    graph::TaskGraph g(2);
    const auto a = g.add_stream(0, StreamKind::data_comm, StreamOrder::arrival);
    const auto b = g.add_stream(1, StreamKind::data_comm);
    const graph::StreamId members[] = {a, b};
    g.add_gang_task(graph::Task{g.add_op(comm(5)), 0, Category::data_comm, g.add_label("G"), -1}, members);
    g.finalize();
    CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("not in program order"), dtsim::core::InternalError);
  }
  SUBCASE("a cut-through task on a concurrent stream") {
    graph::TaskGraph g(1);
    const auto wire = g.add_stream(0, StreamKind::data_comm, StreamOrder::concurrent);
    g.add_cut_through(add(g, wire, FixedOp{1}, Category::data_comm, "D"));
    g.finalize();
    CHECK_THROWS_WITH_AS(g.validate(), doctest::Contains("concurrent stream"), dtsim::core::InternalError);
  }
  SUBCASE("a deadlock through an arrival-order stream names a waiting task") {
    graph::TaskGraph g(1);
    const auto port = g.add_stream(0, StreamKind::data_comm, StreamOrder::arrival);
    const TaskId x = add(g, port, FixedOp{1}, Category::data_comm, "X");
    const TaskId y = add(g, port, FixedOp{1}, Category::data_comm, "Y", {x});
    g.add_dependency(y, x);
    g.finalize();
    CHECK_THROWS_WITH_AS(engine::simulate(g, m.compute, m.network, engine::EngineOptions{}),
                         doctest::Contains("deadlock"), dtsim::core::InternalError);
  }
}
