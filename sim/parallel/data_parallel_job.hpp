// A data-parallel training job of a layer-table model (CNNs, BERT from per-layer tables; DESIGN.md
// "Synchronization"), as the lowering (lower_data_parallel.hpp) needs it: every worker and every
// parameter server, their costs per step already given by the compute and network models
// (results/evaluate_data_parallel.cpp builds it from a scenario). One worker per GPU; a worker's compute
// time per step is its base time times a random factor (none | normal | lognormal with mean 1 and the
// given coefficient of variation, drawn from a stream seeded by (seed, worker): deterministic) times
// the straggler slowdown for the last `stragglers` workers.
#pragma once

#include <cstdint>
#include <vector>

#include "config/data_parallel.hpp"
#include "core/units.hpp"

namespace dtsim::parallel {

struct DataParallelJob {
  std::int64_t workers = 1;
  std::int64_t gpus_per_node = 1;
  core::TimeNs forward_ns = 0;
  core::TimeNs backward_ns = 0;
  core::TimeNs optimizer_ns = 0;  // local optimizer step after the all-reduce (none for pure PS)
  // All-reduce fusion buckets, in the order the backward pass fills them.
  std::vector<double> bucket_ready_fraction;  // of the backward pass, in (0, 1]
  std::vector<core::TimeNs> bucket_allreduce_ns;
  // Parameter servers: per server, the gradient bytes a worker pushes and parameter bytes it pulls
  // per step (0 for a server holding none of them).
  std::vector<double> push_bytes;
  std::vector<double> pull_bytes;
  std::vector<std::int64_t> server_node;  // node of each server; >= worker nodes for dedicated servers
  // Parameter-server clients: each worker (1), or each node's workers together (gpus_per_node: local
  // aggregation), which sum their gradients inside the node (local_reduce_ns), push and pull once,
  // and share the pulled parameters inside the node (local_broadcast_ns).
  std::int64_t client_size = 1;
  core::TimeNs local_reduce_ns = 0;
  core::TimeNs local_broadcast_ns = 0;
  double nic_bytes_per_s = 0.0;       // per node and direction, all NICs together
  double per_flow_bytes_per_s = 0.0;  // cap on one transfer (kernel TCP); 0: none
  // Parameter-server transport software (config::PsTransport): cap on one client-server channel, and
  // the rate of the FIFO through which a server process sends and receives; 0: none.
  double channel_bytes_per_s = 0.0;
  double server_transport_bytes_per_s = 0.0;
  // Large messages: receiving a message of S bytes costs the receiving process (the server for a push,
  // the client for a pull) receive_s_per_square_byte x S^2 seconds; square_bytes[s] = the sum of S^2
  // over the messages (tensors or tensor parts) of server s. Empty or 0: none.
  double receive_s_per_square_byte = 0.0;
  std::vector<double> square_bytes;
  double intra_bytes_per_s = 0.0;
  core::TimeNs message_latency_ns = 0;
  double apply_bytes_per_s = 0.0;
  config::SyncMode sync = config::SyncMode::sync;
  std::int64_t staleness_bound = 0;
  config::Variability variability = config::Variability::none;
  double variability_cv = 0.0;
  std::int64_t stragglers = 0;
  double straggler_slowdown = 1.0;
  std::int64_t steps = 2;  // per worker; the first is warm-up
  std::uint64_t seed = 1;
  // The input pipeline (models/input/input_pipeline.hpp): each worker's batch takes input_load_ns to
  // load. Prefetching, a worker's loader loads its batches back to back, at most input_prefetch_batches
  // ahead of the batch it trains on, and a step starts once its batch is loaded; without, the worker
  // loads each batch after its previous step and then computes. 0: data is always ready.
  core::TimeNs input_load_ns = 0;
  bool input_prefetch = false;
  std::int64_t input_prefetch_batches = 1;

  std::int64_t servers() const { return static_cast<std::int64_t>(push_bytes.size()); }
  std::int64_t buckets() const { return static_cast<std::int64_t>(bucket_allreduce_ns.size()); }
  std::int64_t clients() const { return workers / client_size; }
};

// The per-step compute factor of `worker` at `step` (variability x straggler slowdown): a pure
// function of (job.seed, worker, step).
double compute_factor(const DataParallelJob& job, std::int64_t worker, std::int64_t step);

// The forward and backward pass of `worker` at `step`: the job's times x compute_factor, each rounded
// to whole ns.
struct StepPasses {
  core::TimeNs forward_ns = 0;
  core::TimeNs backward_ns = 0;
};
StepPasses step_passes(const DataParallelJob& job, std::int64_t worker, std::int64_t step);

}  // namespace dtsim::parallel
