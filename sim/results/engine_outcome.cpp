#include "results/engine_outcome.hpp"

#include <utility>

#include <fmt/format.h>

#include "core/units.hpp"

namespace dtsim::results {

std::string out_of_memory_reason(const Memory& m) {
  const auto gib = [](double b) { return b / core::kGiB; };
  return fmt::format(
      "out of memory: needs {:.1f} GiB per GPU (weights {:.1f}, gradients {:.1f}, optimizer {:.1f}, "
      "activations {:.1f}, buffers {:.1f}) but the GPU has {:.1f} GiB",
      gib(m.peak_bytes_per_gpu), gib(m.weights_bytes), gib(m.gradients_bytes), gib(m.optimizer_bytes),
      gib(m.activations_bytes), gib(m.buffers_bytes), gib(m.capacity_bytes_per_gpu));
}

// Mean over simulated ranks of where the time went.
Breakdown breakdown_of(const engine::EngineResult& r) {
  Breakdown b;
  if (r.ranks.empty()) return b;
  const auto busy = [&](graph::Category c) {
    double sum = 0;
    for (const auto& rank : r.ranks) sum += core::ns_to_seconds(rank.busy_ns[static_cast<int>(c)]);
    return sum / static_cast<double>(r.ranks.size());
  };
  const auto exposed = [&](graph::Category c) {
    double sum = 0;
    for (const auto& rank : r.ranks) sum += core::ns_to_seconds(rank.exposed_ns[static_cast<int>(c)]);
    return sum / static_cast<double>(r.ranks.size());
  };
  b.forward_s = busy(graph::Category::forward);
  b.backward_s = busy(graph::Category::backward);
  b.recompute_s = busy(graph::Category::recompute);
  b.optimizer_s = busy(graph::Category::optimizer);
  b.exposed_tensor_comm_s = exposed(graph::Category::tensor_comm);
  b.exposed_context_comm_s = exposed(graph::Category::context_comm);
  b.exposed_pipeline_comm_s = exposed(graph::Category::pipeline_comm);
  b.exposed_data_comm_s = exposed(graph::Category::data_comm);
  b.exposed_embedding_comm_s = exposed(graph::Category::embedding_comm);
  b.exposed_expert_comm_s = exposed(graph::Category::expert_comm);
  b.data_stall_s = exposed(graph::Category::input);
  double idle = 0;
  double host = 0;
  for (const auto& rank : r.ranks) {
    idle += core::ns_to_seconds(rank.idle_ns);
    host += core::ns_to_seconds(rank.host_wait_ns);
  }
  b.pipeline_bubble_s = idle / static_cast<double>(r.ranks.size());
  b.host_wait_s = host / static_cast<double>(r.ranks.size());
  return b;
}

Trace trace_of(const parallel::LoweredGraph& lowered, const engine::EngineResult& r) {
  return trace_of(lowered.graph, lowered.rank_names, r);
}

Trace trace_of(const graph::TaskGraph& g, std::vector<std::string> rank_names, const engine::EngineResult& r) {
  Trace t;
  t.rank_names = std::move(rank_names);
  t.labels = g.labels();
  for (const auto& stream : g.streams()) t.tracks.push_back({stream.rank, graph::to_string(stream.kind)});
  t.spans.reserve(r.spans.size());
  for (const auto& span : r.spans) {
    const graph::Task& task = g.tasks()[span.task];
    if (g.streams()[task.stream].order == graph::StreamOrder::concurrent) continue;
    // A gang task (a collective of every rank) shows on each member's track.
    for (const graph::StreamId stream : g.streams_of(span.task)) {
      t.spans.push_back({stream, task.label, task.category, task.micro_batch, span.start, span.end});
    }
  }
  return t;
}

// A scenario that cannot run: its reason, nothing simulated.
Result infeasible(const config::Scenario& scenario, std::string reason) {
  Result result;
  result.scenario = scenario;
  result.status = Status::infeasible;
  result.reason = std::move(reason);
  result.memory.capacity_bytes_per_gpu = scenario.hbm_bytes_per_gpu();
  result.memory.fits = false;
  return result;
}

}  // namespace dtsim::results
