// The host that issues a rank's compute tasks (engine/simulate.hpp, "Host"). Memory-class ops of B
// bytes take B ns on the fixture's GPU; the host spends h ns per kernel launch.
#include <doctest/doctest.h>

#include "engine_fixture.hpp"

using namespace dtsim::testing::engine_fixture;

namespace {

// Five kernels of `gpu_ns` one after another on one compute stream.
std::vector<TaskId> chain(graph::TaskGraph& g, double gpu_ns) {
  const auto s = g.add_stream(0, StreamKind::compute);
  std::vector<TaskId> tasks;
  for (int i = 0; i < 5; ++i) tasks.push_back(add(g, s, memory(gpu_ns), Category::forward, "k"));
  return tasks;
}

// Memory-class kernels of `ns` on stream s, as one fused op or as a task each; returns the first task.
TaskId kernels(graph::TaskGraph& g, graph::StreamId s, const std::vector<double>& ns, bool fused) {
  if (fused) {
    graph::FusedOp op;
    for (const double v : ns) op.kernels.push_back(std::get<graph::ComputeOp>(memory(v)));
    return add(g, s, graph::Op{op}, Category::forward, "fused");
  }
  TaskId first = 0;
  for (std::size_t i = 0; i < ns.size(); ++i) {
    const TaskId t = add(g, s, memory(ns[i]), Category::forward, "k");
    if (i == 0) first = t;
  }
  return first;
}

}  // namespace

TEST_CASE("short kernels wait for the host: the iteration is the host's issue time") {
  // h = 100 > g = 10: kernel i is issued at 100 (i + 1) and ends 10 later; the last at 510. The GPU is
  // busy 5 x 10 = 50 ns and waits for the host the other 460 ns (100 before the first, 90 between).
  Models m;
  graph::TaskGraph g(1);
  const auto tasks = chain(g, 10);
  const auto r = run(g, m, 1.0, 100.0);
  CHECK(r.makespan == 510);
  CHECK(span_of(r, tasks[2]).start == 300);
  CHECK(busy(r.ranks[0], Category::forward) == 50);
  CHECK(r.ranks[0].host_wait_ns == 460);
  CHECK(r.ranks[0].idle_ns == 0);
  CHECK(total(r.ranks[0]) == r.makespan);
}

TEST_CASE("long kernels hide the host behind them but the first issue") {
  // h = 10 < g = 100: the first kernel starts at 10, the others back to back: 10 + 5 x 100 = 510.
  Models m;
  graph::TaskGraph g(1);
  chain(g, 100);
  const auto r = run(g, m, 1.0, 10.0);
  CHECK(r.makespan == 510);
  CHECK(r.ranks[0].host_wait_ns == 10);
  CHECK(total(r.ranks[0]) == r.makespan);
}

TEST_CASE("without a host cost the engine runs as before") {
  Models m;
  graph::TaskGraph g(1);
  chain(g, 10);
  const auto r = run(g, m, 1.0, 0.0);
  CHECK(r.makespan == 50);
  CHECK(r.ranks[0].host_wait_ns == 0);
}

TEST_CASE("a task the host waits for is issued after its dependencies") {
  // A (100 ns) issued at 10 runs 10-110; the all-reduce C (1000 ns) follows it, 110-1110; B needs C.
  // The host has issued B at 20 (no wait) and D at 30: B runs 1110-1210, D 1210-1310. When the host
  // waits for B's inputs (an .item()), it issues B at 1110 + 10 and D at 1130: B runs 1120-1220, D
  // 1220-1320.
  for (const bool waits : {false, true}) {
    CAPTURE(waits);
    Models m;
    graph::TaskGraph g(1);
    const auto compute = g.add_stream(0, StreamKind::compute);
    const auto comm_stream = g.add_stream(0, StreamKind::data_comm);
    const TaskId a = add(g, compute, memory(100), Category::backward, "a");
    const TaskId c = add(g, comm_stream, comm(1000), Category::data_comm, "c", {a});
    const TaskId b = add(g, compute, memory(100), Category::optimizer, "b", {c});
    const TaskId d = add(g, compute, memory(100), Category::forward, "d");
    if (waits) g.add_host_wait(b);
    const auto r = run(g, m, 1.0, 10.0);
    CHECK(span_of(r, b).start == (waits ? 1120 : 1110));
    CHECK(span_of(r, d).end == (waits ? 1320 : 1310));
    CHECK(total(r.ranks[0]) == r.makespan);
  }
}

TEST_CASE("a fused op runs its kernels when separate tasks would, pausing for the host") {
  // Kernels of 10, 300 and 10 ns, issued 100 ns apart: as tasks, 100-110, 200-500, 500-510, the GPU
  // waiting for the host 0-100 and 110-200. Fused, the op runs its first kernel 100-110, pauses (not
  // busy, waiting for the host) until the second is issued at 200, and runs on to 510: two spans, the
  // same books. A kernel after it is issued at 400 either way and runs 510-520.
  for (const bool fused : {false, true}) {
    CAPTURE(fused);
    Models m;
    graph::TaskGraph g(1);
    const auto s = g.add_stream(0, StreamKind::compute);
    const TaskId first = kernels(g, s, {10, 300, 10}, fused);
    const TaskId last = add(g, s, memory(10), Category::forward, "after");
    const auto r = run(g, m, 1.0, 100.0);
    CHECK(span_of(r, last).start == 510);
    CHECK(r.makespan == 520);
    CHECK(r.ranks[0].host_wait_ns == 190);
    CHECK(busy(r.ranks[0], Category::forward) == 330);
    CHECK(total(r.ranks[0]) == r.makespan);
    if (fused) {
      CHECK(r.spans.size() == 3);  // the op's two parts and the kernel after it
      CHECK(span_of(r, first).start == 100);
      CHECK(span_of(r, first).end == 110);
    }
  }
}

TEST_CASE("a fused op paused for the host is slowed by communication as its kernels as tasks are") {
  // Slowdown 2; an all-reduce of 150 ns on the rank's communication stream from 0. Kernels of 10, 300
  // and 10 ns, issued 100 ns apart: the first runs 100-120 beside the all-reduce (10 ns at half speed),
  // the second, issued at 200 after the all-reduce ended, 200-500, the third 500-510, whether they are
  // three tasks or one fused op. (Starting the fused op late so that it ran back to back, 190-510,
  // would miss the all-reduce and end at 510 with other books.)
  for (const bool fused : {false, true}) {
    CAPTURE(fused);
    Models m;
    graph::TaskGraph g(1);
    const auto s = g.add_stream(0, StreamKind::compute);
    const auto c = g.add_stream(0, StreamKind::data_comm);
    add(g, c, comm(150), Category::data_comm, "all-reduce");
    kernels(g, s, {10, 300, 10}, fused);
    const auto r = run(g, m, 2.0, 100.0);
    CHECK(r.makespan == 510);
    CHECK(busy(r.ranks[0], Category::forward) == 20 + 300 + 10);
    // Books: the all-reduce exposed 0-100 and 120-150 (communication before waiting for the host), the
    // host waited 150-200.
    CHECK(exposed(r.ranks[0], Category::data_comm) == 130);
    CHECK(r.ranks[0].host_wait_ns == 50);
    CHECK(total(r.ranks[0]) == r.makespan);
  }
}

TEST_CASE("the host calls collectives before it issues the compute task after them") {
  // h = 100 ns per launch; kernels of 10 ns. The first is issued at 100 and runs 100-110; the host
  // then calls two collectives (200 ns) and issues the second kernel at 100 + 200 + 100 = 400: it runs
  // 400-410. The GPU waits for the host 100 + 290 = 390 ns.
  Models m;
  graph::TaskGraph g(1);
  const auto s = g.add_stream(0, StreamKind::compute);
  add(g, s, memory(10), Category::forward, "k");
  const TaskId second = add(g, s, memory(10), Category::forward, "k");
  g.add_host_calls(second, 2);
  const auto r = run(g, m, 1.0, 100.0);
  CHECK(span_of(r, second).start == 400);
  CHECK(r.makespan == 410);
  CHECK(r.ranks[0].host_wait_ns == 390);
  CHECK(busy(r.ranks[0], Category::forward) == 20);
}

TEST_CASE("an op's own host time delays its issue and everything the host issues after it") {
  // Kernels of 10 ns issued 100 ns apart, the second with 250 ns of host work before its launch
  // (ComputeOp::host_us): as tasks or fused, the first is issued at 100 and runs 100-110, the second
  // at 100 + 250 + 100 = 450 (450-460), the third at 550 (550-560). The GPU waits for the host 560 - 30
  // = 530 ns. Without a host cost per kernel the host is not simulated and its work is not charged.
  for (const bool fused : {false, true}) {
    CAPTURE(fused);
    Models m;
    graph::TaskGraph g(1);
    const auto s = g.add_stream(0, StreamKind::compute);
    auto second = std::get<graph::ComputeOp>(memory(10));
    second.host_us = 0.25;
    if (fused) {
      graph::FusedOp op;
      op.kernels = {std::get<graph::ComputeOp>(memory(10)), second, std::get<graph::ComputeOp>(memory(10))};
      add(g, s, graph::Op{op}, Category::forward, "fused");
    } else {
      add(g, s, memory(10), Category::forward, "k");
      add(g, s, graph::Op{second}, Category::forward, "k");
      add(g, s, memory(10), Category::forward, "k");
    }
    const auto r = run(g, m, 1.0, 100.0);
    CHECK(r.makespan == 560);
    CHECK(r.ranks[0].host_wait_ns == 530);
    CHECK(busy(r.ranks[0], Category::forward) == 30);
    CHECK(total(r.ranks[0]) == r.makespan);
  }
  Models m;
  graph::TaskGraph g(1);
  const auto s = g.add_stream(0, StreamKind::compute);
  auto op = std::get<graph::ComputeOp>(memory(10));
  op.host_us = 0.25;
  add(g, s, graph::Op{op}, Category::forward, "k");
  CHECK(run(g, m, 1.0, 0.0).makespan == 10);
}

TEST_CASE("per-tensor calls cost the host their own issue, not a module kernel's") {
  // Kernels of 10 ns; the host spends 100 ns per module kernel and 20 ns per per-tensor call. The middle
  // op is three per-tensor adds (ComputeOp::tensor_calls, 3 launches): as tasks or fused, the first op is
  // issued at 100 (runs 100-110), the adds' first launch at 100 + 20 = 120 (runs 120-130), the host is
  // done with them at 100 + 3 x 20 = 160, and the last op is issued at 260 (260-270). Charged as module
  // kernels the adds would start at 200 and the last op at 100 + 300 + 100 = 500.
  for (const bool fused : {false, true}) {
    CAPTURE(fused);
    Models m;
    graph::TaskGraph g(1);
    const auto s = g.add_stream(0, StreamKind::compute);
    auto adds = std::get<graph::ComputeOp>(memory(10));
    adds.kernels = 3;
    adds.tensor_calls = true;
    const graph::ComputeOp plain = std::get<graph::ComputeOp>(memory(10));
    if (fused) {
      graph::FusedOp op;
      op.kernels = {plain, adds, plain};
      add(g, s, graph::Op{op}, Category::forward, "fused");
    } else {
      add(g, s, graph::Op{plain}, Category::forward, "k");
      add(g, s, graph::Op{adds}, Category::forward, "adds");
      add(g, s, graph::Op{plain}, Category::forward, "k");
    }
    const auto r = run(g, m, 1.0, 100.0, 20.0);
    CHECK(r.makespan == 270);
    CHECK(r.ranks[0].host_wait_ns == 240);
    CHECK(total(r.ranks[0]) == r.makespan);
  }
}
