// Result blocks of data-parallel training of layer-table workloads (docs/scenario-and-result.md "Result", blocks
// "data_parallel" and "convergence"): what the event-driven simulation of every worker and server
// measured, and the time-to-converge outcome model on top of it.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::results {

struct Distribution {
  double mean = 0.0;
  double p50 = 0.0;
  double p99 = 0.0;
  double max = 0.0;
};

struct WorkerTime {
  double compute_s = 0.0;  // per step
  double wait_s = 0.0;     // per step: not computing (communication, peers, servers, staleness bound)
};

struct DataParallelStats {
  std::int64_t workers = 0;
  std::int64_t servers = 0;
  std::int64_t per_worker_batch = 0;
  double worker_steps_per_s = 0.0;  // updates per second in async training
  double measured_window_s = 0.0;
  double allreduce_bytes_per_step = 0.0;    // dense gradients all-reduced per step
  double push_bytes_per_worker_step = 0.0;  // gradients a worker pushes to servers per step
  std::vector<double> server_bytes;         // parameter bytes each server holds (sharding imbalance)
  std::int64_t allreduce_buckets = 0;
  Distribution staleness;        // updates, over every applied gradient
  Distribution wait_s_per_step;  // over workers
  std::vector<WorkerTime> per_worker;
  std::int64_t stragglers = 0;
};

struct ConvergenceResult {
  std::string target;
  double b_noise = 0.0;
  double s_min = 0.0;
  double update_batch = 0.0;
  double mean_staleness = 0.0;
  double staleness_penalty = 0.0;
  double staleness_factor = 1.0;
  double steps_without_staleness = 0.0;
  double updates_to_target = 0.0;
  double samples_to_target = 0.0;
  double time_to_target_s = 0.0;
  double gpu_hours = 0.0;
};

}  // namespace dtsim::results
