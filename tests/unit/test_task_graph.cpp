#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "core/errors.hpp"
#include "graph/task_graph.hpp"

using namespace dtsim::graph;
using dtsim::core::InternalError;

namespace {

// Adds a labelled task running a fresh all-reduce op on `stream`.
TaskId add_named(TaskGraph& g, StreamId stream, const std::string& label) {
  const OpId op = g.add_op(CommOp{});
  Task t;
  t.op = op;
  t.stream = stream;
  t.label = g.add_label(label);
  return g.add_task(t);
}

std::string what_of(const TaskGraph& g) {
  try {
    g.validate();
  } catch (const InternalError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("task graph: dense ids, program order and CSR successors") {
  TaskGraph g(2);
  const StreamId s0 = g.add_stream(0, StreamKind::compute);
  const StreamId s1 = g.add_stream(1, StreamKind::tensor_comm);
  CHECK(s0 == 0);
  CHECK(s1 == 1);
  const TaskId a = add_named(g, s0, "a");
  const TaskId b = add_named(g, s1, "b");
  const TaskId c = add_named(g, s0, "c");
  const TaskId d = add_named(g, s1, "d");
  CHECK(a == 0);
  CHECK(d == 3);
  g.add_dependency(a, d);
  g.add_dependency(a, b);
  g.add_dependency(b, c);
  g.add_dependency(a, d);  // duplicate: kept, counts twice
  g.finalize();
  CHECK(g.finalized());
  CHECK(g.stream_tasks(s0) == std::vector<TaskId>{a, c});
  CHECK(g.stream_tasks(s1) == std::vector<TaskId>{b, d});
  // Successors of a, in the order added: d, b, d.
  CHECK(g.succ_begin() == std::vector<std::uint32_t>{0, 3, 4, 4, 4});
  CHECK(g.successors() == std::vector<TaskId>{d, b, d, c});
  CHECK(g.predecessor_counts() == std::vector<std::uint32_t>{0, 1, 1, 2});
  CHECK_NOTHROW(g.validate());
  CHECK(g.task_name(c) == "c (compute stream of rank 0)");
}

TEST_CASE("task graph: a dependency may name a task added later - finalize rejects dangling ids") {
  TaskGraph ok(1);
  const StreamId s = ok.add_stream(0, StreamKind::compute);
  ok.add_dependency(0, 1);  // both added below
  add_named(ok, s, "x");
  add_named(ok, s, "y");
  CHECK_NOTHROW(ok.finalize());
  CHECK(ok.predecessor_counts()[1] == 1);

  TaskGraph bad(1);
  const StreamId s2 = bad.add_stream(0, StreamKind::compute);
  add_named(bad, s2, "x");
  bad.add_dependency(0, 5);
  CHECK_THROWS_AS(bad.finalize(), InternalError);
}

TEST_CASE("task graph: misuse is an internal error") {
  TaskGraph g(1);
  Task t;
  t.stream = 3;  // no such stream
  CHECK_THROWS_AS(g.add_task(t), InternalError);
  const StreamId s = g.add_stream(0, StreamKind::compute);
  add_named(g, s, "x");
  CHECK_THROWS_AS(g.validate(), InternalError);  // not finalized
  g.finalize();
  CHECK_THROWS_AS(g.add_op(CommOp{}), InternalError);
  CHECK_THROWS_AS(g.add_stream(0, StreamKind::compute), InternalError);
  CHECK_THROWS_AS(g.add_label("late"), InternalError);
  CHECK_THROWS_AS(g.add_dependency(0, 0), InternalError);
  CHECK_THROWS_AS(g.finalize(), InternalError);
}

TEST_CASE("task graph: validate rejects dangling op, label and rank") {
  SUBCASE("op") {
    TaskGraph g(1);
    const StreamId s = g.add_stream(0, StreamKind::compute);
    Task t;
    t.stream = s;
    t.op = 4;
    t.label = g.add_label("x");
    g.add_task(t);
    g.finalize();
    CHECK(what_of(g).find("op 4") != std::string::npos);
  }
  SUBCASE("label") {
    TaskGraph g(1);
    const StreamId s = g.add_stream(0, StreamKind::compute);
    Task t;
    t.stream = s;
    t.op = g.add_op(CommOp{});
    t.label = 2;
    g.add_task(t);
    g.finalize();
    CHECK(what_of(g).find("label 2") != std::string::npos);
  }
  SUBCASE("rank") {
    TaskGraph g(2);
    g.add_stream(2, StreamKind::compute);
    g.finalize();
    CHECK(what_of(g).find("rank 2") != std::string::npos);
  }
}

TEST_CASE("task graph: deadlock through dependencies and stream order together") {
  // Stream 0 runs a then b; stream 1 runs c then d. a waits for d and c waits for b:
  // a -> b (stream) -> c (dependency) -> d (stream) -> a (dependency): no task can ever start,
  // though the dependency edges alone (d -> a, b -> c) are acyclic.
  TaskGraph g(2);
  const StreamId s0 = g.add_stream(0, StreamKind::compute);
  const StreamId s1 = g.add_stream(1, StreamKind::compute);
  const TaskId a = add_named(g, s0, "a");
  const TaskId b = add_named(g, s0, "b");
  const TaskId c = add_named(g, s1, "c");
  const TaskId d = add_named(g, s1, "d");
  g.add_dependency(d, a);
  g.add_dependency(b, c);
  g.finalize();
  const std::string what = what_of(g);
  CHECK(what.find("deadlock") != std::string::npos);
  CHECK(what.find("4 of 4 tasks") != std::string::npos);
  // The cycle is named in execution order, starting anywhere on it.
  const bool names_cycle = what.find("a (compute stream of rank 0) -> b") != std::string::npos ||
                           what.find("b (compute stream of rank 0) -> c") != std::string::npos ||
                           what.find("c (compute stream of rank 1) -> d") != std::string::npos ||
                           what.find("d (compute stream of rank 1) -> a") != std::string::npos;
  CHECK_MESSAGE(names_cycle, what);
}

TEST_CASE("task graph: a dependency against program order deadlocks - tasks after a cycle are blocked too") {
  // Stream 0: x, y, z with y -> x: x can only start after y, which queues behind x. z is blocked
  // behind them but not on the cycle: 3 tasks can never start, the cycle is x -> y -> x.
  TaskGraph g(1);
  const StreamId s = g.add_stream(0, StreamKind::compute);
  const TaskId free_task = add_named(g, g.add_stream(0, StreamKind::data_comm), "free");
  const TaskId x = add_named(g, s, "x");
  const TaskId y = add_named(g, s, "y");
  add_named(g, s, "z");
  g.add_dependency(free_task, x);
  g.add_dependency(y, x);
  g.finalize();
  const std::string what = what_of(g);
  CHECK(what.find("3 of 4 tasks") != std::string::npos);
  CHECK(what.find("z (") == std::string::npos);
  CHECK(what.find("x (compute stream of rank 0)") != std::string::npos);
  CHECK(what.find("y (compute stream of rank 0)") != std::string::npos);
}

TEST_CASE("task graph: self dependency is a cycle") {
  TaskGraph g(1);
  const TaskId t = add_named(g, g.add_stream(0, StreamKind::compute), "loop");
  g.add_dependency(t, t);
  g.finalize();
  CHECK(what_of(g).find("loop (compute stream of rank 0) -> loop") != std::string::npos);
}

TEST_CASE("task graph: long chains across streams validate") {
  // 3 streams on 3 ranks, 1000 tasks each; task i of stream k depends on task i of stream k-1.
  TaskGraph g(3);
  std::vector<StreamId> streams;
  for (RankId r = 0; r < 3; ++r) streams.push_back(g.add_stream(r, StreamKind::compute));
  const OpId op = g.add_op(ComputeOp{});
  const dtsim::graph::LabelId label = g.add_label("t");
  std::vector<std::vector<TaskId>> ids(3);
  for (int i = 0; i < 1000; ++i) {
    for (std::size_t k = 0; k < 3; ++k) {
      ids[k].push_back(g.add_task(Task{op, streams[k], Category::forward, label, -1}));
      if (k > 0) g.add_dependency(ids[k - 1].back(), ids[k].back());
    }
  }
  g.finalize();
  CHECK_NOTHROW(g.validate());
}

TEST_CASE("task graph: a gang task joins the program order of every member stream") {
  // Streams: s0 (rank 0), s1 (rank 1), s2 (rank 2). a on s0, then gang g over s0, s1, s2, then b on
  // s1. Program orders: s0 = a, g; s1 = g, b; s2 = g. g is one task, named after its first member.
  TaskGraph g(3);
  const StreamId s0 = g.add_stream(0, StreamKind::tensor_comm);
  const StreamId s1 = g.add_stream(1, StreamKind::tensor_comm);
  const StreamId s2 = g.add_stream(2, StreamKind::tensor_comm);
  const TaskId a = add_named(g, s0, "a");
  Task gang;
  gang.op = g.add_op(CommOp{});
  gang.label = g.add_label("g");
  const std::vector<StreamId> members{s0, s1, s2};
  const TaskId gt = g.add_gang_task(gang, members);
  const TaskId b = add_named(g, s1, "b");
  g.add_dependency(a, b);
  g.finalize();
  CHECK(g.tasks().size() == 3);
  CHECK(g.stream_tasks(s0) == std::vector<TaskId>{a, gt});
  CHECK(g.stream_tasks(s1) == std::vector<TaskId>{gt, b});
  CHECK(g.stream_tasks(s2) == std::vector<TaskId>{gt});
  CHECK(g.tasks()[gt].stream == s0);
  const auto of_gang = g.streams_of(gt);
  CHECK(std::vector<StreamId>(of_gang.begin(), of_gang.end()) == members);
  REQUIRE(g.streams_of(b).size() == 1);
  CHECK(g.streams_of(b)[0] == s1);
  REQUIRE(g.gangs().size() == 1);
  CHECK(g.gangs()[0].task == gt);
  CHECK(g.gangs()[0].size == 3);
  CHECK(g.task_name(gt) == "g (tensor_comm stream of rank 0 and 2 more)");
  CHECK_NOTHROW(g.validate());
}

TEST_CASE("task graph: gang misuse and deadlock through a gang") {
  SUBCASE("one member is a plain task; none, an unknown or a repeated stream is an error") {
    TaskGraph g(2);
    const StreamId s0 = g.add_stream(0, StreamKind::tensor_comm);
    const StreamId s1 = g.add_stream(1, StreamKind::tensor_comm);
    Task t;
    t.op = g.add_op(CommOp{});
    t.label = g.add_label("t");
    const std::vector<StreamId> one{s1};
    const TaskId single = g.add_gang_task(t, one);
    CHECK(g.gangs().empty());
    CHECK(g.tasks()[single].stream == s1);
    CHECK_THROWS_AS(g.add_gang_task(t, std::vector<StreamId>{}), InternalError);
    CHECK_THROWS_AS(g.add_gang_task(t, std::vector<StreamId>{s0, 7}), InternalError);
    CHECK_THROWS_AS(g.add_gang_task(t, std::vector<StreamId>{s0, s1, s0}), InternalError);
    // A rejected gang leaves no trace in the program orders, and the next gang on them is accepted.
    CHECK(g.stream_tasks(s0).empty());
    CHECK(g.stream_tasks(s1) == std::vector<TaskId>{single});
    CHECK(g.stream_size(s0) == 0);
    CHECK(g.stream_size(s1) == 1);
    CHECK(g.tasks().size() == 1);
    const TaskId both = g.add_gang_task(t, std::vector<StreamId>{s0, s1});
    CHECK(g.stream_tasks(s0) == std::vector<TaskId>{both});
    CHECK(g.stream_tasks(s1) == std::vector<TaskId>{single, both});
  }
  SUBCASE("a gang runs a collective") {
    TaskGraph g(2);
    Task t;
    t.op = g.add_op(ComputeOp{});
    t.label = g.add_label("compute gang");
    g.add_gang_task(
        t, std::vector<StreamId>{g.add_stream(0, StreamKind::compute), g.add_stream(1, StreamKind::compute)});
    g.finalize();
    CHECK(what_of(g).find("runs a compute op") != std::string::npos);
  }
  SUBCASE("deadlock") {
    // s0 (rank 0): a, then gang g; s1 (rank 1): g, then b; b -> a. a waits for b, which queues
    // behind g, which queues behind a on s0: a -> g (s0 order) -> b (s1 order) -> a.
    TaskGraph g(2);
    const StreamId s0 = g.add_stream(0, StreamKind::tensor_comm);
    const StreamId s1 = g.add_stream(1, StreamKind::tensor_comm);
    const TaskId a = add_named(g, s0, "a");
    Task t;
    t.op = g.add_op(CommOp{});
    t.label = g.add_label("g");
    g.add_gang_task(t, std::vector<StreamId>{s0, s1});
    const TaskId b = add_named(g, s1, "b");
    g.add_dependency(b, a);
    g.finalize();
    const std::string what = what_of(g);
    CHECK(what.find("3 of 3 tasks") != std::string::npos);
    CHECK(what.find("g (tensor_comm stream of rank 0 and 1 more)") != std::string::npos);
  }
}

TEST_CASE("graph enums print their names") {
  CHECK(std::string(to_string(ComputeClass::gemm)) == "gemm");
  CHECK(std::string(to_string(ComputeClass::optimizer)) == "optimizer");
  CHECK(std::string(to_string(CollectiveKind::reduce_scatter)) == "reduce_scatter");
  CHECK(std::string(to_string(CollectiveKind::send_recv)) == "send_recv");
  CHECK(std::string(to_string(StreamKind::param_gather)) == "param_gather");
  CHECK(std::string(to_string(StreamKind::pipeline_send)) == "pipeline_send");
  CHECK(std::string(to_string(StreamKind::context_comm)) == "context_comm");
  CHECK(std::string(to_string(Category::recompute)) == "recompute");
  CHECK(std::string(to_string(Category::data_comm)) == "data_comm");
}
