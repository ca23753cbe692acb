#include "results/data_parallel_run.hpp"

#include <algorithm>
#include <limits>

#include "engine/simulate.hpp"
#include "parallel/lower_data_parallel.hpp"
#include "results/engine_outcome.hpp"

namespace dtsim::results {

namespace data_parallel_measure {

using core::TimeNs;

struct Times {
  std::vector<TimeNs> start;
  std::vector<TimeNs> end;
};

Times times_of(const engine::EngineResult& run, std::size_t tasks) {
  Times t{std::vector<TimeNs>(tasks, 0), std::vector<TimeNs>(tasks, 0)};
  for (const engine::Span& s : run.spans) {
    t.start[s.task] = s.start;
    t.end[s.task] = s.end;
  }
  return t;
}

// Replays the servers' updates in the order they completed: a client's gradient applied at version v
// of its server's parameters, read at version r (after its previous update), was v - r updates stale;
// a synchronous update applies every client's gradient fresh.
std::vector<std::uint64_t> staleness_of(const parallel::DataParallelJob& job, const parallel::DataParallelTasks& tasks,
                                        const engine::EngineResult& run) {
  std::vector<std::int32_t> update_of(tasks.graph.tasks().size(), -1);
  for (std::size_t u = 0; u < tasks.updates.size(); ++u) update_of[tasks.updates[u].task] = static_cast<std::int32_t>(u);
  const auto servers = static_cast<std::size_t>(job.servers());
  std::vector<std::int64_t> version(servers, 0);
  std::vector<std::int64_t> read(static_cast<std::size_t>(job.clients()) * servers, 0);
  std::vector<std::uint64_t> histogram;
  const auto count = [&](std::int64_t stale) {
    const auto s = static_cast<std::size_t>(stale);
    if (s >= histogram.size()) histogram.resize(s + 1, 0);
    ++histogram[s];
  };
  for (const engine::Span& span : run.spans) {
    const std::int32_t u = update_of[span.task];
    if (u < 0) continue;
    const parallel::DataParallelTasks::Update& update = tasks.updates[static_cast<std::size_t>(u)];
    const auto srv = static_cast<std::size_t>(update.server);
    if (update.client < 0) {
      for (std::int64_t c = 0; c < job.clients(); ++c) count(0);
    } else {
      std::int64_t& r = read[static_cast<std::size_t>(update.client) * servers + srv];
      count(version[srv] - r);
      r = version[srv] + 1;
    }
    ++version[srv];
  }
  return histogram;
}

}  // namespace data_parallel_measure

DpTrainingResult simulate_data_parallel(const parallel::DataParallelJob& job, const compute::ComputeModel& compute,
                                        const network::NetworkModel& network, bool trace) {
  parallel::DataParallelTasks tasks = parallel::lower_data_parallel(job);
  tasks.graph.finalize();
  engine::EngineOptions options;
  options.record_spans = true;
  const engine::EngineResult run = engine::simulate(tasks.graph, compute, network, options);
  const data_parallel_measure::Times t = data_parallel_measure::times_of(run, tasks.graph.tasks().size());

  DpTrainingResult result;
  result.events = run.events;
  result.tasks = tasks.graph.tasks().size();
  result.makespan = run.makespan;
  result.staleness = data_parallel_measure::staleness_of(job, tasks, run);
  if (trace) result.trace = trace_of(tasks.graph, std::move(tasks.rank_names), run);
  const std::int64_t steps = job.steps;
  const auto at = [&](std::int64_t w, std::int64_t k) { return static_cast<std::size_t>(w * steps + k); };
  // The window: from the last worker's warm-up step to the first worker's last step (the whole run
  // when they do not overlap); the steps completed in it.
  core::TimeNs from = 0;
  core::TimeNs to = std::numeric_limits<core::TimeNs>::max();
  for (std::int64_t w = 0; w < job.workers; ++w) {
    from = std::max(from, t.end[tasks.done[at(w, 0)]]);
    to = std::min(to, t.end[tasks.done[at(w, steps - 1)]]);
  }
  if (to <= from) {
    from = 0;
    to = run.makespan;
  }
  std::int64_t completed = 0;
  result.workers.assign(static_cast<std::size_t>(job.workers), DpWorkerStats{});
  for (std::int64_t w = 0; w < job.workers; ++w) {
    DpWorkerStats& stats = result.workers[static_cast<std::size_t>(w)];
    stats.steps = steps;
    for (std::int64_t k = 0; k < steps; ++k) {
      const core::TimeNs done = t.end[tasks.done[at(w, k)]];
      completed += (done > from && done <= to) ? 1 : 0;
      const parallel::StepPasses passes = parallel::step_passes(job, w, k);
      stats.compute_s += core::ns_to_seconds(passes.forward_ns + passes.backward_ns) +
                         core::ns_to_seconds(job.optimizer_ns);
      // The warm-up step's wait (the first batch, loaded before anything runs) is not the steady state's.
      if (k > 0) stats.input_wait_s += core::ns_to_seconds(t.start[tasks.begin[at(w, k)]] - t.end[tasks.ready[at(w, k)]]);
    }
    stats.wait_s = std::max(0.0, core::ns_to_seconds(t.end[tasks.done[at(w, steps - 1)]]) - stats.compute_s);
  }
  result.window_s = core::ns_to_seconds(to - from);
  result.worker_steps_per_s = result.window_s > 0.0 ? static_cast<double>(completed) / result.window_s : 0.0;
  return result;
}

std::uint64_t DpTrainingResult::applied() const {
  std::uint64_t n = 0;
  for (const auto c : staleness) n += c;
  return n;
}

std::int64_t DpTrainingResult::max_staleness() const {
  for (std::size_t s = staleness.size(); s-- > 0;) {
    if (staleness[s] != 0) return static_cast<std::int64_t>(s);
  }
  return 0;
}

}  // namespace dtsim::results
