// Event-driven simulation of data-parallel training with every worker and every parameter server
// (DESIGN.md "Synchronization"): workers compute, push gradients and pull parameters (parameter
// servers) or join all-reduce buckets (all-reduce), on their own clocks, through the engine's event
// queue. One worker per GPU; a worker's compute time per step is its base time times a random factor
// (none | normal | lognormal with mean 1 and the given coefficient of variation, drawn from a stream
// seeded by (seed, worker): deterministic) times the straggler slowdown for the last `stragglers`
// workers.
//
// All-reduce (and the dense part of hybrid): the backward pass fills fusion buckets at the given
// fractions of the backward time; a bucket's all-reduce starts when every worker has filled it and the
// previous bucket's all-reduce is done (one communicator: collectives run in order), and lasts the
// precomputed collective time. A worker applies its optimizer step after the last bucket.
//
// Parameter servers (and the sparse part of hybrid): after its backward pass a client (a worker, or
// with local aggregation a node's workers once all are done and their gradients summed) pushes to each
// server its shard of gradient bytes and pulls the shard's parameters back. A transfer between nodes
// goes through the sender's egress and then the receiver's ingress, each a FIFO server at the node's
// NIC rate (transfers through a port take turns; the switch buffers between the two ports, so a
// sender is not held up by a busy receiver), goes no faster than the fabric's per-flow cap (one
// transfer is one flow), and arrives one message latency later; a transfer inside a node goes at the
// node's intra-node rate. The transport software (TensorFlow's gRPC, ...) may cap each transfer at a
// channel rate, pass every transfer of a server through one FIFO at the server process's rate, and
// charge the receiving process (one FIFO per server and per client) a time quadratic in each message's
// size, inside a node too. Servers fold gradients into the parameters at `apply_bytes_per_s` (one FIFO per
// server).
//   sync     the server sums every client's gradient, then updates once and answers every pull.
//   async    the server applies each gradient as it arrives and answers that client's pull at once.
//   bounded  as async, but a worker whose clock (completed steps) is more than `staleness_bound`
//            ahead of the slowest worker waits (stale synchronous parallel, Ho et al. NIPS 2013).
// Staleness of an applied gradient = updates applied to that server's parameters between the client's
// read of them and the application of its gradient (0 in sync).
#pragma once

#include <cstdint>
#include <vector>

#include "config/data_parallel.hpp"
#include "core/units.hpp"

namespace dtsim::engine {

struct DpTrainingSetup {
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
};

struct DpWorkerStats {
  double compute_s = 0.0;  // time computing
  double wait_s = 0.0;     // time not computing: communicating, waiting on peers, servers or the bound
  double input_wait_s = 0.0;  // of wait_s: waiting for the input pipeline's next batch, after the warm-up step
  std::int64_t steps = 0;
};

struct DpTrainingResult {
  double worker_steps_per_s = 0.0;  // completed worker steps per second in the measurement window
  double window_s = 0.0;            // the window: from the last worker's warm-up step to the first finish
  std::vector<DpWorkerStats> workers;
  // Staleness histogram: staleness[s] = applied (worker gradient, server) pairs that were s updates stale.
  std::vector<std::uint64_t> staleness;
  std::uint64_t applied() const;
  std::int64_t max_staleness() const;
  std::uint64_t events = 0;
  core::TimeNs makespan = 0;
};

// The simulation encodes (worker, server) and (worker, bucket) pairs in its events: workers x
// max(servers, buckets) must stay below this.
inline constexpr std::int64_t kMaxWorkerPairs = std::int64_t{1} << 28;

DpTrainingResult simulate_dp_training(const DpTrainingSetup& setup);

// The per-step compute factor of `worker` at `step` (variability x straggler slowdown): a pure
// function of (setup.seed, worker, step), exposed for tests.
double compute_factor(const DpTrainingSetup& setup, std::int64_t worker, std::int64_t step);

}  // namespace dtsim::engine
