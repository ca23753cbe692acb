// Event rate of the engine against a plain priority-queue event loop (DESIGN.md, "The engine": the
// engine must stay within a small factor of it; the goal here is at least half its rate).
//
// For each synthetic graph shape, three benchmarks replay the same events:
//   baseline_pq   std::priority_queue<pair<time, seq>>: pops and pushes only
//   event_queue   the engine's EventQueue on the same pop/push sequence (the heap alone)
//   engine        simulate() on the task graph, setup included (one event per task)
// The baseline replays the engine's own event sequence, reconstructed from its spans: the same
// times, the same count and the same number pending after every step. items_per_second is the event
// rate; main() prints engine/baseline ratios at the end. Debian's libbenchmark is a debug build, so
// absolute numbers carry its overhead: compare ratios from one run.
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "compute/compute_model.hpp"
#include "core/errors.hpp"
#include "engine/event_queue.hpp"
#include "engine/simulate.hpp"
#include "graph/task_graph.hpp"
#include "network/network_model.hpp"

namespace {

using dtsim::core::TimeNs;
namespace graph = dtsim::graph;
namespace engine = dtsim::engine;

// Communication op durations: `bytes` nanoseconds.
class FakeNetwork : public dtsim::network::NetworkModel {
 public:
  TimeNs duration(const graph::CommOp& op) const override { return static_cast<TimeNs>(op.bytes); }
  const char* name() const override { return "fake"; }
};

// Memory-bound ops take `bytes` ns on this GPU (1 GB/s at full efficiency, no launch cost).
dtsim::config::GpuProfile ns_per_byte_gpu() {
  dtsim::config::GpuProfile gpu;
  gpu.id = "bench";
  for (auto& peak : gpu.peak_tflops) peak = 100.0;
  gpu.hbm_bandwidth_gbytes_per_s = 1.0;
  gpu.memory_efficiency = 1.0;
  gpu.gemm = dtsim::config::GemmCurve{0.8, 128, 128, 64.0, 0.9};
  gpu.attention_efficiency = 0.5;
  return gpu;
}

struct Shape {
  std::uint32_t ranks = 0;
  std::uint32_t layers = 0;
  std::string name() const { return std::to_string(ranks) + "x" + std::to_string(layers); }
};

// R ranks, each with a compute, a tensor, a data and a pipeline stream. Per rank and layer i:
//   c  compute (8 memory ops of 600..1300 ns, rotated per rank so ranks drift apart), after the
//      previous layer's tensor comm; on odd layers also after the previous rank's pipeline send
//   t  tensor all-reduce after c (serial: exposed)
//   d  data all-reduce after c on every 4th layer (3 us, overlapped)
//   p  pipeline send after c on even layers
// About 2.75 tasks per rank and layer; ops are shared (costed once).
graph::TaskGraph build_graph(const Shape& shape) {
  graph::TaskGraph g(shape.ranks);
  std::vector<graph::OpId> compute_ops;
  for (int k = 0; k < 8; ++k) {
    graph::ComputeOp op;
    op.bytes = 600.0 + 100.0 * k;
    compute_ops.push_back(g.add_op(op));
  }
  const auto comm_op = [&](graph::CollectiveKind kind, double ns) {
    graph::CommOp op;
    op.kind = kind;
    op.bytes = ns;
    return g.add_op(op);
  };
  const graph::OpId tensor_ops[2] = {comm_op(graph::CollectiveKind::all_reduce, 150),
                                     comm_op(graph::CollectiveKind::all_reduce, 230)};
  const graph::OpId data_op = comm_op(graph::CollectiveKind::all_reduce, 3000);
  const graph::OpId send_op = comm_op(graph::CollectiveKind::send_recv, 400);
  const graph::LabelId label = g.add_label("bench");
  struct RankStreams {
    graph::StreamId compute, tensor, data, send;
  };
  std::vector<RankStreams> streams;
  for (graph::RankId r = 0; r < shape.ranks; ++r) {
    streams.push_back(
        {g.add_stream(r, graph::StreamKind::compute), g.add_stream(r, graph::StreamKind::tensor_comm),
         g.add_stream(r, graph::StreamKind::data_comm), g.add_stream(r, graph::StreamKind::pipeline_send)});
  }
  const auto task = [&](graph::OpId op, graph::StreamId s, graph::Category c) {
    return g.add_task(graph::Task{op, s, c, label, -1});
  };
  std::vector<graph::TaskId> last_tensor(shape.ranks), last_send(shape.ranks);
  for (std::uint32_t i = 0; i < shape.layers; ++i) {
    const auto category = i < shape.layers / 2 ? graph::Category::forward : graph::Category::backward;
    for (graph::RankId r = 0; r < shape.ranks; ++r) {
      const auto& s = streams[r];
      const auto c = task(compute_ops[(i + 3 * r) % 8], s.compute, category);
      if (i > 0) g.add_dependency(last_tensor[r], c);
      if (i % 2 == 1 && r > 0) g.add_dependency(last_send[r - 1], c);
      last_tensor[r] = task(tensor_ops[(i + r) % 2], s.tensor, graph::Category::tensor_comm);
      g.add_dependency(c, last_tensor[r]);
      if (i % 4 == 3) g.add_dependency(c, task(data_op, s.data, graph::Category::data_comm));
      if (i % 2 == 0) {
        last_send[r] = task(send_op, s.send, graph::Category::pipeline_comm);
        g.add_dependency(c, last_send[r]);
      }
    }
  }
  g.finalize();
  g.validate();
  return g;
}

// The engine's event sequence as pushes and pops: `initial` pushes, then for each pop i the
// after_pop[i] pushes that followed it. A task's event is pushed when it starts (after the pops at
// that instant: all durations here are positive) and popped when it ends.
struct EventTrace {
  std::vector<TimeNs> push_times;
  std::vector<TimeNs> pop_times;
  std::uint32_t initial = 0;
  std::vector<std::uint32_t> after_pop;
  std::size_t max_pending = 0;
};

EventTrace trace_of(const engine::EngineResult& result) {
  EventTrace trace;
  std::vector<engine::Span> starts = result.spans;
  std::stable_sort(starts.begin(), starts.end(),
                   [](const engine::Span& a, const engine::Span& b) { return a.start < b.start; });
  std::size_t next = 0;
  std::size_t pending = 0;
  const auto push_before = [&](TimeNs t) {
    std::uint32_t count = 0;
    for (; next < starts.size() && starts[next].start < t; ++next, ++count) {
      DTSIM_CHECK(starts[next].end > starts[next].start, "bench graphs have positive durations");
      trace.push_times.push_back(starts[next].end);
    }
    pending += count;
    trace.max_pending = std::max(trace.max_pending, pending);
    return count;
  };
  for (std::size_t i = 0; i < result.spans.size(); ++i) {
    const std::uint32_t pushed = push_before(result.spans[i].end);
    if (i == 0) {
      trace.initial = pushed;
    } else {
      trace.after_pop.push_back(pushed);
    }
    trace.pop_times.push_back(result.spans[i].end);
    --pending;
  }
  trace.after_pop.push_back(0);
  DTSIM_CHECK(next == starts.size(), "every push precedes its pop");
  return trace;
}

// Replays the trace through `queue` (push(time), pop() -> time); returns the sum of popped times.
template <typename Queue>
TimeNs replay(const EventTrace& trace, Queue& queue) {
  std::size_t next = 0;
  for (std::uint32_t k = 0; k < trace.initial; ++k) queue.push(trace.push_times[next++]);
  TimeNs sum = 0;
  for (const std::uint32_t pushes : trace.after_pop) {
    sum += queue.pop();
    for (std::uint32_t k = 0; k < pushes; ++k) queue.push(trace.push_times[next++]);
  }
  return sum;
}

// The baseline: a standard-library heap of (time, seq) pairs.
class PlainQueue {
 public:
  explicit PlainQueue(std::size_t capacity) : queue_(std::greater<>(), reserved(capacity)) {}
  void push(TimeNs time) { queue_.emplace(time, seq_++); }
  TimeNs pop() {
    const TimeNs t = queue_.top().first;
    queue_.pop();
    return t;
  }

 private:
  using Item = std::pair<TimeNs, std::uint64_t>;
  static std::vector<Item> reserved(std::size_t n) {
    std::vector<Item> v;
    v.reserve(n);
    return v;
  }
  std::priority_queue<Item, std::vector<Item>, std::greater<>> queue_;
  std::uint64_t seq_ = 0;
};

class EngineQueue {
 public:
  explicit EngineQueue(std::size_t capacity) { queue_.reserve(capacity); }
  void push(TimeNs time) { queue_.push(time, 0); }
  TimeNs pop() { return queue_.pop().time; }

 private:
  engine::EventQueue queue_;
};

struct Fixture {
  Shape shape;
  dtsim::config::GpuProfile gpu = ns_per_byte_gpu();
  dtsim::compute::ComputeModel compute{gpu, dtsim::config::Precision::bf16};
  FakeNetwork network;
  engine::EngineOptions options{false, 1.1};
  graph::TaskGraph graph;
  EventTrace trace;

  explicit Fixture(const Shape& s) : shape(s), graph(build_graph(s)) {
    const auto result =
        engine::simulate(graph, compute, network, engine::EngineOptions{true, options.overlap_slowdown});
    trace = trace_of(result);
    // The replay must pop exactly the engine's completion times.
    PlainQueue check(trace.max_pending);
    std::size_t i = 0;
    std::size_t next = 0;
    for (std::uint32_t k = 0; k < trace.initial; ++k) check.push(trace.push_times[next++]);
    for (const std::uint32_t pushes : trace.after_pop) {
      DTSIM_CHECK(check.pop() == trace.pop_times[i++], "replay diverges from the engine");
      for (std::uint32_t k = 0; k < pushes; ++k) check.push(trace.push_times[next++]);
    }
  }
};

void set_counters(benchmark::State& state, const Fixture& f) {
  const auto events = static_cast<std::int64_t>(f.trace.pop_times.size());
  state.SetItemsProcessed(state.iterations() * events);
  state.counters["events"] = static_cast<double>(events);
  state.counters["max_pending"] = static_cast<double>(f.trace.max_pending);
}

void register_shape(const std::shared_ptr<Fixture>& f) {
  const std::string suffix = fmt::format("/{}", f->shape.name());
  benchmark::RegisterBenchmark(("baseline_pq" + suffix).c_str(), [f](benchmark::State& state) {
    for (auto _ : state) {
      PlainQueue queue(f->trace.max_pending);
      benchmark::DoNotOptimize(replay(f->trace, queue));
    }
    set_counters(state, *f);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("event_queue" + suffix).c_str(), [f](benchmark::State& state) {
    for (auto _ : state) {
      EngineQueue queue(f->trace.max_pending);
      benchmark::DoNotOptimize(replay(f->trace, queue));
    }
    set_counters(state, *f);
  })->Unit(benchmark::kMillisecond);
  benchmark::RegisterBenchmark(("engine" + suffix).c_str(), [f](benchmark::State& state) {
    for (auto _ : state) {
      const auto result = engine::simulate(f->graph, f->compute, f->network, f->options);
      benchmark::DoNotOptimize(result.makespan);
    }
    set_counters(state, *f);
  })->Unit(benchmark::kMillisecond);
}

// Prints as the console reporter does and keeps every run's event rate, by benchmark name.
class RateReporter : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& run : runs) {
      const auto it = run.counters.find("items_per_second");
      if (run.run_type == Run::RT_Iteration && !run.error_occurred && it != run.counters.end()) {
        rates_[run.run_name.function_name].push_back(it->second.value);
      }
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // Median over repetitions; 0 when the benchmark did not run (filtered out).
  double rate(const std::string& name) const {
    const auto it = rates_.find(name);
    if (it == rates_.end()) return 0.0;
    std::vector<double> v = it->second;
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  }

 private:
  std::map<std::string, std::vector<double>> rates_;
};

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  // Few, some and many events pending at once (about 2 per rank): 16, 256 and 4096 ranks.
  const std::vector<Shape> shapes{{16, 10000}, {256, 600}, {4096, 40}};
  std::vector<std::shared_ptr<Fixture>> fixtures;
  for (const Shape& s : shapes) {
    fixtures.push_back(std::make_shared<Fixture>(s));
    register_shape(fixtures.back());
  }
  RateReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  std::printf("\n");
  for (const auto& f : fixtures) {
    const std::string name = f->shape.name();
    const double base = reporter.rate("baseline_pq/" + name);
    const double heap = reporter.rate("event_queue/" + name);
    const double eng = reporter.rate("engine/" + name);
    if (base <= 0.0 || eng <= 0.0) continue;
    std::printf(
        "%s (%zu events, up to %zu pending): baseline %.1f M/s, event_queue %.1f M/s, engine %.1f M/s\n",
        name.c_str(), f->trace.pop_times.size(), f->trace.max_pending, base / 1e6, heap / 1e6, eng / 1e6);
    std::printf("  engine/baseline event-rate ratio: %.2f (goal >= 0.5)\n", eng / base);
  }
  benchmark::Shutdown();
  return 0;
}
