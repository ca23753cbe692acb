// Engine properties checked on random graphs: stream rules, accounting against a brute-force sweep,
// fused kernel runs against separate tasks, determinism.
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

namespace {

// The same random schedule twice: each run of compute kernels as one task per kernel, or as one task
// of a FusedOp. Per rank: a compute, a tensor and a data stream, and 40 runs of 1..4 memory kernels
// (0..30 ns each, some zero). After a run, half the time a communication task (0..40 ns) on the tensor
// or data stream, which the next run waits for half the time (else it runs beside it, slowed) and
// which may also wait for the latest run of the rank below. Dependencies enter a run at its first
// kernel and leave from its last.
struct RunGraph {
  graph::TaskGraph graph{3};
  std::vector<std::pair<TaskId, TaskId>> runs;  // first and last task of each run
};

RunGraph run_graph(std::uint64_t seed, bool fused) {
  std::mt19937_64 rng(seed);
  RunGraph out;
  auto& g = out.graph;
  struct RankStreams {
    graph::StreamId compute, tensor, data;
  };
  std::vector<RankStreams> streams;
  for (graph::RankId r = 0; r < 3; ++r) {
    streams.push_back({g.add_stream(r, StreamKind::compute), g.add_stream(r, StreamKind::tensor_comm),
                       g.add_stream(r, StreamKind::data_comm)});
  }
  const graph::LabelId label = g.add_label("k");
  std::vector<std::optional<TaskId>> waits(3), last_run(3);
  for (int segment = 0; segment < 40; ++segment) {
    for (graph::RankId r = 0; r < 3; ++r) {
      const auto kernels = 1 + rng() % 4;
      std::vector<graph::ComputeOp> ops;
      for (std::uint64_t k = 0; k < kernels; ++k) {
        graph::ComputeOp op;
        op.bytes = rng() % 5 == 0 ? 0.0 : static_cast<double>(rng() % 31);
        ops.push_back(op);
      }
      TaskId first = 0;
      TaskId last = 0;
      if (fused) {
        first = last = g.add_task(
            graph::Task{g.add_op(graph::FusedOp{ops}), streams[r].compute, Category::forward, label, -1});
      } else {
        for (std::size_t k = 0; k < ops.size(); ++k) {
          last = g.add_task(graph::Task{g.add_op(ops[k]), streams[r].compute, Category::forward, label, -1});
          if (k == 0) first = last;
        }
      }
      if (waits[r]) g.add_dependency(*waits[r], first);
      waits[r].reset();
      out.runs.emplace_back(first, last);
      last_run[r] = last;
      if (rng() % 2 == 0) {
        const auto stream = rng() % 2 == 0 ? streams[r].tensor : streams[r].data;
        const TaskId c =
            add(g, stream, comm(static_cast<double>(rng() % 41)), Category::tensor_comm, "c", {last});
        if (r > 0 && rng() % 3 == 0) g.add_dependency(*last_run[r - 1], c);
        if (rng() % 2 == 0) waits[r] = c;
      }
    }
  }
  g.finalize();
  g.validate();
  return out;
}

}  // namespace

TEST_CASE("engine: a fused run of kernels times exactly as its kernels one task each") {
  // Whatever the slowdown and however communication starts and stops during a run, the fused task
  // starts with its first kernel and ends with its last, and every rank's books are the same: the
  // engine rounds each kernel as a task of its own would be rounded.
  for (const double slowdown : {1.0, 1.19, 1.5, 2.0}) {
    for (std::uint64_t seed = 1; seed <= 6; ++seed) {
      CAPTURE(slowdown);
      CAPTURE(seed);
      Models m;
      const RunGraph split = run_graph(seed, false);
      const RunGraph fused = run_graph(seed, true);
      const auto a =
          engine::simulate(split.graph, m.compute, m.network, engine::EngineOptions{true, slowdown});
      const auto b =
          engine::simulate(fused.graph, m.compute, m.network, engine::EngineOptions{true, slowdown});
      REQUIRE(split.runs.size() == fused.runs.size());
      CHECK(a.makespan == b.makespan);
      CHECK(b.events == fused.graph.tasks().size());
      for (std::size_t i = 0; i < split.runs.size(); ++i) {
        CHECK(span_of(a, split.runs[i].first).start == span_of(b, fused.runs[i].first).start);
        CHECK(span_of(a, split.runs[i].second).end == span_of(b, fused.runs[i].second).end);
      }
      for (std::size_t r = 0; r < a.ranks.size(); ++r) {
        CHECK(a.ranks[r].busy_ns == b.ranks[r].busy_ns);
        CHECK(a.ranks[r].exposed_ns == b.ranks[r].exposed_ns);
        CHECK(a.ranks[r].idle_ns == b.ranks[r].idle_ns);
      }
    }
  }
}

namespace {

// A random acyclic graph: dependencies only from lower to higher ids, and ids increase along every
// stream. Ranks have several compute and communication streams; rank 0 has 70 streams (more than one
// 64-bit word of busy flags). Ops come from a small shared pool mixing both kinds, durations 0..40.
struct RandomGraph {
  graph::TaskGraph graph{3};
  std::vector<std::vector<TaskId>> preds;
};

RandomGraph random_graph(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  RandomGraph out;
  auto& g = out.graph;
  std::vector<graph::StreamId> streams;
  for (graph::RankId r = 0; r < 3; ++r) {
    const int count = r == 0 ? 70 : 5;
    for (int k = 0; k < count; ++k) {
      const auto kind = k % 3 == 0 ? StreamKind::compute : static_cast<StreamKind>(1 + k % 5);
      streams.push_back(g.add_stream(r, kind));
    }
  }
  std::vector<graph::OpId> ops;
  for (int i = 0; i < 12; ++i) {
    const double ns = static_cast<double>(rng() % 41);
    ops.push_back(g.add_op(i % 2 == 0 ? memory(ns) : comm(ns)));
  }
  const graph::LabelId label = g.add_label("t");
  const int n = 1500;
  for (int i = 0; i < n; ++i) {
    // Rank 0's many streams get few tasks each; the other ranks carry most of the work.
    const auto s = rng() % 3 == 0 ? streams[rng() % 70] : streams[70 + rng() % 10];
    const auto category = static_cast<Category>(rng() % graph::kCategoryCount);
    const TaskId t = g.add_task(graph::Task{ops[rng() % ops.size()], s, category, label, -1});
    out.preds.emplace_back();
    const int deps = static_cast<int>(rng() % 3);
    for (int d = 0; d < deps && t > 0; ++d) {
      const auto before = static_cast<TaskId>(t - 1 - rng() % std::min<TaskId>(t, 40));
      g.add_dependency(before, t);
      out.preds.back().push_back(before);
    }
  }
  g.finalize();
  g.validate();
  return out;
}

// The state of `rank` over each interval between span boundaries, straight from the definition.
engine::RankTime account_from_spans(const graph::TaskGraph& g, const engine::EngineResult& r,
                                    graph::RankId rank) {
  std::vector<engine::Span> mine;
  std::vector<TimeNs> cuts{0, r.makespan};
  for (const auto& s : r.spans) {
    if (g.streams()[g.tasks()[s.task].stream].rank != rank || s.start == s.end) continue;
    mine.push_back(s);
    cuts.push_back(s.start);
    cuts.push_back(s.end);
  }
  std::sort(cuts.begin(), cuts.end());
  cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
  engine::RankTime out;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    const TimeNs lo = cuts[i];
    const TimeNs hi = cuts[i + 1];
    const engine::Span* compute_span = nullptr;
    const engine::Span* comm_span = nullptr;
    for (const auto& s : mine) {
      if (s.start > lo || s.end < hi) continue;
      const auto stream = g.tasks()[s.task].stream;
      const bool is_compute = g.streams()[stream].kind == StreamKind::compute;
      const engine::Span*& pick = is_compute ? compute_span : comm_span;
      if (pick == nullptr || stream < g.tasks()[pick->task].stream) pick = &s;
    }
    if (compute_span != nullptr) {
      out.busy_ns[static_cast<int>(g.tasks()[compute_span->task].category)] += hi - lo;
    } else if (comm_span != nullptr) {
      out.exposed_ns[static_cast<int>(g.tasks()[comm_span->task].category)] += hi - lo;
    } else {
      out.idle_ns += hi - lo;
    }
  }
  return out;
}

// Time during `span` when some communication task (non-zero length) of the same rank was running.
TimeNs comm_overlap(const graph::TaskGraph& g, const engine::EngineResult& r, TaskId task,
                    const engine::Span& span) {
  const graph::RankId rank = g.streams()[g.tasks()[task].stream].rank;
  std::vector<std::pair<TimeNs, TimeNs>> busy;
  for (const auto& s : r.spans) {
    const auto& stream = g.streams()[g.tasks()[s.task].stream];
    if (stream.rank != rank || stream.kind == StreamKind::compute) continue;
    const TimeNs lo = std::max(s.start, span.start);
    const TimeNs hi = std::min(s.end, span.end);
    if (hi > lo) busy.emplace_back(lo, hi);
  }
  std::sort(busy.begin(), busy.end());
  TimeNs covered = 0;
  TimeNs reach = span.start;
  for (const auto& [lo, hi] : busy) {
    if (hi <= reach) continue;
    covered += hi - std::max(lo, reach);
    reach = hi;
  }
  return covered;
}

}  // namespace

TEST_CASE("engine: random graphs obey the stream rules, and accounting matches the spans") {
  // Every task starts as early as the rules allow: at the latest end among its dependencies and the
  // previous task of its stream (0 if none). Communication lasts its op's duration; compute does its
  // op's work at full speed, and at 1/slowdown while a communication task of its rank runs: the span's
  // length minus (1 - 1/slowdown) x its overlap with the rank's communication equals the work, to the
  // nanosecond of rounding. Each rank's accounting equals a brute-force sweep over the spans and sums
  // to the makespan.
  for (const double slowdown : {1.0, 1.3}) {
    for (std::uint64_t seed = 1; seed <= 4; ++seed) {
      Models m;
      const RandomGraph rg = random_graph(seed);
      const auto& g = rg.graph;
      const auto r = engine::simulate(g, m.compute, m.network, engine::EngineOptions{true, slowdown});
      REQUIRE(r.spans.size() == g.tasks().size());
      CHECK(r.events == g.tasks().size());
      std::vector<engine::Span> by_task(g.tasks().size());
      for (const auto& s : r.spans) by_task[s.task] = s;
      TimeNs last_end = 0;
      for (const auto& s : r.spans) {
        CHECK(s.end >= last_end);  // completion order
        last_end = s.end;
      }
      CHECK(r.makespan == last_end);
      for (graph::StreamId s = 0; s < g.streams().size(); ++s) {
        const std::vector<TaskId> order = g.stream_tasks(s);
        for (std::size_t i = 0; i < order.size(); ++i) {
          const TaskId t = order[i];
          TimeNs ready = i == 0 ? 0 : by_task[order[i - 1]].end;
          for (const TaskId p : rg.preds[t]) ready = std::max(ready, by_task[p].end);
          REQUIRE(by_task[t].start == ready);
          const graph::Op& op = g.ops()[g.tasks()[t].op];
          const TimeNs plain = std::holds_alternative<graph::CommOp>(op)
                                   ? static_cast<TimeNs>(std::get<graph::CommOp>(op).bytes)
                                   : static_cast<TimeNs>(std::get<graph::ComputeOp>(op).bytes);
          const TimeNs took = by_task[t].end - by_task[t].start;
          const bool compute_op = std::holds_alternative<graph::ComputeOp>(g.ops()[g.tasks()[t].op]) &&
                                  g.streams()[g.tasks()[t].stream].kind == StreamKind::compute;
          if (!compute_op) {
            CHECK(took == plain);
            continue;
          }
          const double work = static_cast<double>(took) -
                              (1.0 - 1.0 / slowdown) * static_cast<double>(comm_overlap(g, r, t, by_task[t]));
          CHECK(std::abs(work - static_cast<double>(plain)) <= 1.0);
        }
      }
      for (graph::RankId rank = 0; rank < g.ranks(); ++rank) {
        const auto expected = account_from_spans(g, r, rank);
        CHECK(total(r.ranks[rank]) == r.makespan);
        CHECK(r.ranks[rank].busy_ns == expected.busy_ns);
        CHECK(r.ranks[rank].exposed_ns == expected.exposed_ns);
        CHECK(r.ranks[rank].idle_ns == expected.idle_ns);
      }
    }
  }
}

TEST_CASE("engine: deterministic, and spans are optional") {
  // The same graph twice gives identical spans and accounting; without record_spans nothing else
  // changes.
  Models m;
  const RandomGraph rg = random_graph(99);
  const auto a = engine::simulate(rg.graph, m.compute, m.network, engine::EngineOptions{true, 1.2});
  const auto b = engine::simulate(rg.graph, m.compute, m.network, engine::EngineOptions{true, 1.2});
  const auto c = engine::simulate(rg.graph, m.compute, m.network, engine::EngineOptions{false, 1.2});
  const auto same = [](const engine::Span& x, const engine::Span& y) {
    return x.task == y.task && x.start == y.start && x.end == y.end;
  };
  CHECK(a.spans.size() == rg.graph.tasks().size());
  CHECK(std::equal(a.spans.begin(), a.spans.end(), b.spans.begin(), b.spans.end(), same));
  CHECK(c.spans.empty());
  CHECK(a.makespan == c.makespan);
  for (std::size_t r = 0; r < a.ranks.size(); ++r) {
    CHECK(a.ranks[r].busy_ns == b.ranks[r].busy_ns);
    CHECK(a.ranks[r].exposed_ns == c.ranks[r].exposed_ns);
    CHECK(a.ranks[r].idle_ns == c.ranks[r].idle_ns);
  }
}
