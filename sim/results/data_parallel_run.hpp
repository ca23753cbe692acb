// simulate_data_parallel(): a data-parallel job (parallel/data_parallel_job.hpp) lowered to the task
// graph of every worker and server (parallel/lower_data_parallel.hpp), run on the engine
// (engine/simulate.hpp), and what its timeline says: each worker's compute and waits, completed steps
// per second in the steady window, the staleness of every gradient a server applied.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "compute/compute_model.hpp"
#include "core/units.hpp"
#include "network/network_model.hpp"
#include "parallel/data_parallel_job.hpp"
#include "results/result.hpp"

namespace dtsim::results {

struct DpWorkerStats {
  double compute_s = 0.0;     // time computing
  double wait_s = 0.0;        // time not computing: communicating, waiting on peers, servers or the bound
  double input_wait_s = 0.0;  // of wait_s: waiting for the input pipeline's next batch, after the warm-up step
  std::int64_t steps = 0;
};

struct DpTrainingResult {
  double worker_steps_per_s = 0.0;  // completed worker steps per second in the measurement window
  double window_s = 0.0;            // the window: from the last worker's warm-up step to the first finish
  std::vector<DpWorkerStats> workers;
  // Staleness histogram: staleness[s] = applied (worker gradient, server) pairs that were s updates
  // stale: the updates of that server's parameters between the client's read of them (its previous
  // pull) and the application of its gradient (0 in sync).
  std::vector<std::uint64_t> staleness;
  std::uint64_t applied() const;
  std::int64_t max_staleness() const;
  std::uint64_t events = 0;
  std::uint64_t tasks = 0;  // in the task graph of every worker and server
  core::TimeNs makespan = 0;
  std::optional<Trace> trace;  // with `trace`: every worker's, port's and server's tasks
};

// The job's tasks are all of fixed duration: `compute` and `network` are the engine's models, which
// cost none of them. Requires a job that parallel::lower_data_parallel() accepts.
DpTrainingResult simulate_data_parallel(const parallel::DataParallelJob& job, const compute::ComputeModel& compute,
                                        const network::NetworkModel& network, bool trace = false);

}  // namespace dtsim::results
