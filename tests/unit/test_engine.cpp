#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <random>
#include <string>
#include <variant>
#include <vector>

#include "compute/compute_model.hpp"
#include "core/errors.hpp"
#include "engine/simulate.hpp"
#include "engine_fixture.hpp"
#include "graph/task_graph.hpp"
#include "network/network_model.hpp"

using namespace dtsim;
using core::TimeNs;
using graph::Category;
using graph::StreamKind;
using graph::TaskId;

using namespace dtsim::testing::engine_fixture;

TEST_CASE("engine: compute chain with a communication tail") {
  // Rank 0, compute stream: A(10) then B(5); tensor stream: C(7) after A.
  // A [0,10); at 10 B and C start: B [10,15), C [10,17). Makespan 17.
  // Rank 0: compute busy 15 (forward), then only C runs: exposed tensor comm 17 - 15 = 2, idle 0.
  Models m;
  graph::TaskGraph g(1);
  const auto compute = g.add_stream(0, StreamKind::compute);
  const auto tensor = g.add_stream(0, StreamKind::tensor_comm);
  const TaskId a = add(g, compute, memory(10), Category::forward, "A");
  const TaskId b = add(g, compute, memory(5), Category::forward, "B", {a});
  const TaskId c = add(g, tensor, comm(7), Category::tensor_comm, "C", {a});
  const auto r = run(g, m);
  CHECK(r.makespan == 17);
  CHECK(r.events == 3);
  CHECK(span_of(r, a).start == 0);
  CHECK(span_of(r, b).start == 10);
  CHECK(span_of(r, b).end == 15);
  CHECK(span_of(r, c).end == 17);
  REQUIRE(r.ranks.size() == 1);
  CHECK(busy(r.ranks[0], Category::forward) == 15);
  CHECK(exposed(r.ranks[0], Category::tensor_comm) == 2);
  CHECK(r.ranks[0].idle_ns == 0);
  CHECK(total(r.ranks[0]) == r.makespan);
}

TEST_CASE("engine: a stream runs in program order even when a later task is ready first") {
  // Compute stream: X (waits for Z) then Y (no dependency, ready at 0). Data stream: Z(20).
  // Y cannot pass X: Z [0,20), X [20,30), Y [30,35). Makespan 35.
  // Rank 0: exposed data comm 20 (Z alone), busy backward 15, idle 0.
  Models m;
  graph::TaskGraph g(1);
  const auto compute = g.add_stream(0, StreamKind::compute);
  const auto data = g.add_stream(0, StreamKind::data_comm);
  const TaskId z = add(g, data, comm(20), Category::data_comm, "Z");
  const TaskId x = add(g, compute, comm(10), Category::backward, "X", {z});
  const TaskId y = add(g, compute, comm(5), Category::backward, "Y");
  const auto r = run(g, m);
  CHECK(span_of(r, x).start == 20);
  CHECK(span_of(r, y).start == 30);
  CHECK(r.makespan == 35);
  CHECK(exposed(r.ranks[0], Category::data_comm) == 20);
  CHECK(busy(r.ranks[0], Category::backward) == 15);
  CHECK(total(r.ranks[0]) == 35);
}

TEST_CASE("engine: dependencies across ranks") {
  // Rank 0 sends S(8) on its pipeline stream; rank 1 computes F(4) after it.
  // S [0,8), F [8,12). Rank 0: exposed pipeline 8, idle 4. Rank 1: idle 8, busy forward 4.
  Models m;
  graph::TaskGraph g(2);
  const auto send = g.add_stream(0, StreamKind::pipeline_send);
  g.add_stream(0, StreamKind::compute);
  const auto compute1 = g.add_stream(1, StreamKind::compute);
  const TaskId s = add(g, send, comm(8), Category::pipeline_comm, "S");
  const TaskId f = add(g, compute1, memory(4), Category::forward, "F", {s});
  const auto r = run(g, m);
  CHECK(span_of(r, f).start == 8);
  CHECK(r.makespan == 12);
  CHECK(exposed(r.ranks[0], Category::pipeline_comm) == 8);
  CHECK(r.ranks[0].idle_ns == 4);
  CHECK(r.ranks[1].idle_ns == 8);
  CHECK(busy(r.ranks[1], Category::forward) == 4);
}

TEST_CASE("engine: simultaneous completions pop in (time, seq) order") {
  // Three streams of rank 0 each start one 5 ns task at 0. Starts go communication first (by stream
  // id), then compute: seq Y=0 (stream 1), Z=1 (stream 2), X=2 (stream 0). All end at 5, so spans,
  // recorded in completion order, are Y, Z, X.
  Models m;
  graph::TaskGraph g(1);
  const auto s0 = g.add_stream(0, StreamKind::compute);
  const auto s1 = g.add_stream(0, StreamKind::tensor_comm);
  const auto s2 = g.add_stream(0, StreamKind::data_comm);
  const TaskId x = add(g, s0, comm(5), Category::forward, "X");
  const TaskId y = add(g, s1, comm(5), Category::tensor_comm, "Y");
  const TaskId z = add(g, s2, comm(5), Category::data_comm, "Z");
  const auto r = run(g, m);
  REQUIRE(r.spans.size() == 3);
  CHECK(r.spans[0].task == y);
  CHECK(r.spans[1].task == z);
  CHECK(r.spans[2].task == x);
  // Compute busy the whole 5 ns: all of it is forward time, nothing exposed.
  CHECK(busy(r.ranks[0], Category::forward) == 5);
  CHECK(exposed(r.ranks[0], Category::tensor_comm) == 0);
}

TEST_CASE("engine: compute started under running communication is slowed, memo keeps the plain time") {
  // Slowdown 1.5. Data stream: D(100) from 0. Compute stream: M, M, M' where M and M' share one
  // 10 ns memory op and M' waits for D.
  //  M  starts at 0 with D running (D started first at the same instant): 10 * 1.5 = 15 -> [0,15)
  //  M  at 15, D still running: [15,30)
  //  M' at 100, D just ended: plain 10 -> [100,110)
  // Rank 0: busy forward 15 + 15 + 10 = 40, exposed data comm 30..100 = 70, idle 0; sum 110.
  Models m;
  graph::TaskGraph g(1);
  const auto compute = g.add_stream(0, StreamKind::compute);
  const auto data = g.add_stream(0, StreamKind::data_comm);
  const auto op = g.add_op(memory(10));
  const TaskId d = add(g, data, comm(100), Category::data_comm, "D");
  const TaskId m1 = add(g, compute, op, Category::forward, "M1");
  const TaskId m2 = add(g, compute, op, Category::forward, "M2");
  const TaskId m3 = add(g, compute, op, Category::forward, "M3", {d});
  const auto r = run(g, m, 1.5);
  CHECK(span_of(r, m1).end == 15);
  CHECK(span_of(r, m2).start == 15);
  CHECK(span_of(r, m2).end == 30);
  CHECK(span_of(r, m3).start == 100);
  CHECK(span_of(r, m3).end == 110);
  CHECK(r.makespan == 110);
  CHECK(busy(r.ranks[0], Category::forward) == 40);
  CHECK(exposed(r.ranks[0], Category::data_comm) == 70);
  CHECK(r.ranks[0].idle_ns == 0);
  CHECK(total(r.ranks[0]) == 110);
}

TEST_CASE("engine: overlap slowdown at a shared instant, whatever the completion order") {
  // Slowdown 2. A(10) on compute; then B(10) on compute and C(7) on the tensor stream, both after A.
  // At 10 both start and B sees C running: during [10,17) B does 7/2 = 3.5 ns of its work, the other
  // 6.5 at full speed from 17: it ends at 23.5, rounded half up to 24. The same holds when C is
  // declared before B. A zero-duration communication task Z does not count:
  // it has already ended at the instant compute starts. A CommOp K(10) on the compute stream is never
  // slowed, though D(50), started with it after B, runs beside it: B [10,20), K [20,30).
  Models m;
  for (const bool comm_first : {false, true}) {
    graph::TaskGraph g(1);
    const auto compute = g.add_stream(0, StreamKind::compute);
    const auto tensor = g.add_stream(0, StreamKind::tensor_comm);
    const TaskId a = add(g, compute, memory(10), Category::forward, "A");
    TaskId b = 0;
    if (comm_first) {
      add(g, tensor, comm(7), Category::tensor_comm, "C", {a});
      b = add(g, compute, memory(10), Category::forward, "B", {a});
    } else {
      b = add(g, compute, memory(10), Category::forward, "B", {a});
      add(g, tensor, comm(7), Category::tensor_comm, "C", {a});
    }
    const auto r = run(g, m, 2.0);
    CHECK(span_of(r, b).start == 10);
    CHECK(span_of(r, b).end == 24);
    CHECK(r.makespan == 24);
  }
  graph::TaskGraph g(1);
  const auto compute = g.add_stream(0, StreamKind::compute);
  const auto tensor = g.add_stream(0, StreamKind::tensor_comm);
  const auto data = g.add_stream(0, StreamKind::data_comm);
  const TaskId a = add(g, compute, memory(10), Category::forward, "A");
  add(g, tensor, comm(0), Category::tensor_comm, "Z", {a});
  const TaskId b = add(g, compute, memory(10), Category::forward, "B", {a});
  const TaskId k = add(g, compute, comm(10), Category::forward, "K");
  add(g, data, comm(50), Category::data_comm, "D", {b});
  const auto r = run(g, m, 2.0);
  CHECK(span_of(r, b).end == 20);
  CHECK(span_of(r, k).end == 30);
}

TEST_CASE("engine: each op is costed once") {
  // 100 tasks on two streams share 2 communication ops: 2 calls to the network model.
  Models m;
  graph::TaskGraph g(1);
  const auto s0 = g.add_stream(0, StreamKind::tensor_comm);
  const auto s1 = g.add_stream(0, StreamKind::data_comm);
  const auto op0 = g.add_op(comm(3));
  const auto op1 = g.add_op(comm(4));
  for (int i = 0; i < 50; ++i) {
    add(g, s0, op0, Category::tensor_comm, "t");
    add(g, s1, op1, Category::data_comm, "d");
  }
  const auto r = run(g, m);
  CHECK(m.network.calls() == 2);
  CHECK(r.makespan == 200);  // stream 1: 50 x 4 ns
  CHECK(r.events == 100);
}

TEST_CASE("engine: zero-duration tasks and the empty graph") {
  // A chain of three zero-duration tasks over two streams ends at 0; every rank's parts sum to 0.
  Models m;
  graph::TaskGraph g(1);
  const auto s0 = g.add_stream(0, StreamKind::compute);
  const auto s1 = g.add_stream(0, StreamKind::tensor_comm);
  const TaskId a = add(g, s0, comm(0), Category::forward, "a");
  const TaskId b = add(g, s1, comm(0), Category::tensor_comm, "b", {a});
  add(g, s0, comm(0), Category::forward, "c", {b});
  const auto r = run(g, m);
  CHECK(r.events == 3);
  CHECK(r.makespan == 0);
  CHECK(total(r.ranks[0]) == 0);

  graph::TaskGraph empty(2);
  const auto e = run(empty, m);
  CHECK(e.makespan == 0);
  CHECK(e.events == 0);
  CHECK(e.ranks.size() == 2);
}

TEST_CASE("engine: deadlock and misuse are internal errors") {
  // Same cycle as the task graph test: a -> b (stream) -> c (dependency) -> d (stream) -> a.
  // Without validate(), the engine drains its queue with 4 tasks never run; e.g. names a stream head.
  Models m;
  graph::TaskGraph g(2);
  const auto s0 = g.add_stream(0, StreamKind::compute);
  const auto s1 = g.add_stream(1, StreamKind::compute);
  const auto free_stream = g.add_stream(1, StreamKind::data_comm);
  add(g, free_stream, comm(5), Category::data_comm, "free");
  const TaskId a = add(g, s0, comm(1), Category::forward, "a");
  const TaskId b = add(g, s0, comm(1), Category::forward, "b");
  const TaskId c = add(g, s1, comm(1), Category::forward, "c", {b});
  add(g, s1, comm(1), Category::forward, "d");
  g.add_dependency(c + 1, a);
  CHECK_THROWS_AS(engine::simulate(g, m.compute, m.network, {}), core::InternalError);  // not finalized
  g.finalize();
  try {
    engine::simulate(g, m.compute, m.network, {});
    FAIL("no deadlock reported");
  } catch (const core::InternalError& e) {
    CHECK(std::string(e.what()) == "deadlock: 4 tasks never ran, e.g. a (compute stream of rank 0)");
  }
}

TEST_CASE("engine: a gang task starts once the last member's stream reaches it and its dependencies end") {
  // Ranks 0..2, each with a compute and a tensor stream; gang G (5 ns) on the three tensor streams.
  // Rank 0's tensor stream runs X (10) before G, rank 2's Y (20); rank 1's starts with G. C (4) on
  // rank 1's compute stream waits for G.
  //   G starts when Y, the last task ahead of it, ends: [20,25); C [25,29). Makespan 29.
  // Each member rank's books count G as its tensor communication:
  //   rank 0: X 10 + G 5 exposed, idle 10..20 and 25..29 = 14
  //   rank 1: idle 0..20, G 5 exposed, C 4 busy
  //   rank 2: Y 20 + G 5 exposed, idle 4
  // With a dependency D (30, rank 2's compute stream) -> G, G waits for it instead: [30,35), C [35,39).
  for (const bool with_dependency : {false, true}) {
    Models m;
    graph::TaskGraph g(3);
    std::vector<graph::StreamId> compute, tensor;
    for (graph::RankId r = 0; r < 3; ++r) {
      compute.push_back(g.add_stream(r, StreamKind::compute));
      tensor.push_back(g.add_stream(r, StreamKind::tensor_comm));
    }
    const TaskId x = add(g, tensor[0], comm(10), Category::tensor_comm, "X");
    const TaskId y = add(g, tensor[2], comm(20), Category::tensor_comm, "Y");
    const TaskId gang = g.add_gang_task(
        graph::Task{g.add_op(comm(5)), 0, Category::tensor_comm, g.add_label("G"), -1}, tensor);
    const TaskId c = add(g, compute[1], memory(4), Category::forward, "C", {gang});
    if (with_dependency) {
      const TaskId d = add(g, compute[2], memory(30), Category::forward, "D");
      g.add_dependency(d, gang);
    }
    const auto r = run(g, m);
    const TimeNs begin = with_dependency ? 30 : 20;
    CHECK(span_of(r, x).end == 10);
    CHECK(span_of(r, y).end == 20);
    CHECK(span_of(r, gang).start == begin);
    CHECK(span_of(r, gang).end == begin + 5);
    CHECK(span_of(r, c).start == begin + 5);
    CHECK(r.makespan == begin + 9);
    CHECK(r.events == g.tasks().size());
    CHECK(r.spans.size() == g.tasks().size());  // one span for the gang
    for (graph::RankId rank = 0; rank < 3; ++rank) CHECK(total(r.ranks[rank]) == r.makespan);
    if (!with_dependency) {
      CHECK(exposed(r.ranks[0], Category::tensor_comm) == 15);
      CHECK(r.ranks[0].idle_ns == 14);
      CHECK(r.ranks[1].idle_ns == 20);
      CHECK(exposed(r.ranks[1], Category::tensor_comm) == 5);
      CHECK(busy(r.ranks[1], Category::forward) == 4);
      CHECK(exposed(r.ranks[2], Category::tensor_comm) == 25);
      CHECK(r.ranks[2].idle_ns == 4);
    }
  }
}

TEST_CASE("engine: a gang task slows the compute of every member rank") {
  // Slowdown 2. Ranks 0 and 1 each run M (10 ns of work) on their compute stream from 0; gang G (4)
  // on their tensor streams waits for Z (3) on rank 2's data stream: G [3,7). Rank 3, no member,
  // runs M too. On ranks 0 and 1, M does 3 ns of work by 3, then 4 ns at half speed (2 ns of work),
  // then the last 5 at full speed: it ends at 12. On rank 3 it ends at 10.
  // Books: ranks 0 and 1 forward 12 (G fully overlapped, nothing exposed); rank 2 data comm 3 exposed,
  // idle 9; rank 3 forward 10, idle 2.
  Models m;
  graph::TaskGraph g(4);
  std::vector<graph::StreamId> compute, tensor;
  for (graph::RankId r = 0; r < 4; ++r) {
    compute.push_back(g.add_stream(r, StreamKind::compute));
    tensor.push_back(g.add_stream(r, StreamKind::tensor_comm));
  }
  const auto data2 = g.add_stream(2, StreamKind::data_comm);
  const auto work = g.add_op(memory(10));
  const TaskId m0 = add(g, compute[0], work, Category::forward, "M0");
  const TaskId m1 = add(g, compute[1], work, Category::forward, "M1");
  const TaskId m3 = add(g, compute[3], work, Category::forward, "M3");
  const TaskId z = add(g, data2, comm(3), Category::data_comm, "Z");
  const std::vector<graph::StreamId> members{tensor[0], tensor[1]};
  const TaskId gang = g.add_gang_task(
      graph::Task{g.add_op(comm(4)), 0, Category::tensor_comm, g.add_label("G"), -1}, members);
  g.add_dependency(z, gang);
  const auto r = run(g, m, 2.0);
  CHECK(span_of(r, gang).start == 3);
  CHECK(span_of(r, gang).end == 7);
  CHECK(span_of(r, m0).end == 12);
  CHECK(span_of(r, m1).end == 12);
  CHECK(span_of(r, m3).end == 10);
  CHECK(r.makespan == 12);
  for (const graph::RankId rank : {0U, 1U}) {
    CHECK(busy(r.ranks[rank], Category::forward) == 12);
    CHECK(exposed(r.ranks[rank], Category::tensor_comm) == 0);
    CHECK(r.ranks[rank].idle_ns == 0);
  }
  CHECK(exposed(r.ranks[2], Category::data_comm) == 3);
  CHECK(r.ranks[2].idle_ns == 9);
  CHECK(busy(r.ranks[3], Category::forward) == 10);
  CHECK(r.ranks[3].idle_ns == 2);
}

TEST_CASE("engine: after a gang each member stream moves on to its own next task, in any member order") {
  // Ranks 0..2, a tensor stream each; gang G1 (5 ns) lists its members as ranks 2, 0, 1 and gang G2
  // (4 ns) as 1, 2, 0. Between them each stream runs its own task T_r of (r + 1) ns, after G1 on its
  // stream: T_r [5, 5 + r + 1). G2 starts when the last member reaches it, after T_2: [8, 12). Each
  // stream ends with U_r (2 ns): [12, 14).
  Models m;
  graph::TaskGraph g(3);
  std::vector<graph::StreamId> tensor;
  for (graph::RankId r = 0; r < 3; ++r) tensor.push_back(g.add_stream(r, StreamKind::tensor_comm));
  const auto gang_over = [&](std::vector<graph::StreamId> members, double ns, const char* label) {
    return g.add_gang_task(graph::Task{g.add_op(comm(ns)), 0, Category::tensor_comm, g.add_label(label), -1},
                           members);
  };
  const TaskId g1 = gang_over({tensor[2], tensor[0], tensor[1]}, 5, "G1");
  std::vector<TaskId> t, u;
  for (graph::RankId r = 0; r < 3; ++r) {
    t.push_back(add(g, tensor[r], comm(static_cast<double>(r + 1)), Category::tensor_comm, "T"));
  }
  const TaskId g2 = gang_over({tensor[1], tensor[2], tensor[0]}, 4, "G2");
  for (graph::RankId r = 0; r < 3; ++r) u.push_back(add(g, tensor[r], comm(2), Category::tensor_comm, "U"));
  const auto r = run(g, m);
  CHECK(span_of(r, g1).start == 0);
  CHECK(span_of(r, g1).end == 5);
  for (graph::RankId k = 0; k < 3; ++k) {
    CHECK(span_of(r, t[k]).start == 5);
    CHECK(span_of(r, t[k]).end == 5 + static_cast<TimeNs>(k) + 1);
    CHECK(span_of(r, u[k]).start == 12);
    CHECK(span_of(r, u[k]).end == 14);
  }
  CHECK(span_of(r, g2).start == 8);
  CHECK(span_of(r, g2).end == 12);
  CHECK(r.makespan == 14);
}
