// lower_data_parallel(): the steps of a data-parallel job (data_parallel_job.hpp) as one task graph of
// every worker and every parameter server, for the engine that runs every other workload
// (engine/simulate.hpp). Per worker and step, on its compute stream in program order: `ready` (the
// previous step is done and, bounded, the slowest worker is close enough), `begin` (its batch is loaded),
// the forward pass, the backward pass in chunks that end where each all-reduce bucket fills, then the
// optimizer step (`done`), which waits for the step's last all-reduce and its client's pulls.
//
// All-reduce (and the dense part of hybrid): bucket b's all-reduce is a gang over every worker's data
// stream, after every worker's chunk b; the buckets run in order (one communicator).
//
// Parameter servers (and the sparse part of hybrid): after its backward pass a client (a worker, or
// with local aggregation a node's workers once all are done and their gradients summed) pushes to each
// server its shard of gradient bytes, starting with server c mod S so that the clients' first pushes
// spread over the servers, and pulls the shard's parameters back. A transfer between nodes holds the
// sender's egress port and the receiver's ingress port, each an arrival-order stream at the node's NIC
// rate: the receiver's port takes the bytes while the sender's sends them (cut-through; the switch
// buffers between the two, so a sender is not held up by a busy receiver, whose port takes them when
// free); it goes no faster than the fabric's per-flow cap (one transfer is one flow) and arrives one
// message latency later. A transfer inside a node goes at the node's intra-node rate. The transport
// software (TensorFlow's gRPC, ...) may cap each transfer at a channel rate, pass every transfer of a
// server through one FIFO at the server process's rate, and charge the receiving process (one FIFO per
// server and per client) a time quadratic in each message's size, inside a node too. Servers fold
// gradients into the parameters at `apply_bytes_per_s` (one FIFO per server: its CPU).
//   sync     the server sums every client's gradient, then updates once and answers every pull.
//   async    the server applies each gradient as it arrives and answers that client's pull at once.
//   bounded  as async, but a worker whose clock (completed steps) is more than `staleness_bound`
//            ahead of the slowest worker waits (stale synchronous parallel, Ho et al. NIPS 2013): its
//            step c waits for every worker's step c - bound - 1.
// The input pipeline: each worker's batch is a load on its input stream; prefetching, load k waits
// for step k - prefetch_batches to begin (a free buffer slot), else for step k to be ready.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/task_graph.hpp"
#include "parallel/data_parallel_job.hpp"

namespace dtsim::parallel {

struct DataParallelTasks {
  graph::TaskGraph graph{1};
  std::vector<std::string> rank_names;  // workers, nodes' ports, servers, clients' receivers, delays
  // Per worker and step, at w * steps + k: the marker tasks named above.
  std::vector<graph::TaskId> ready;
  std::vector<graph::TaskId> begin;
  std::vector<graph::TaskId> done;
  // Each update of a server's parameters, in no particular order: a client's gradient applied (async,
  // bounded), or the update with every client's summed gradient (sync; client is -1).
  struct Update {
    graph::TaskId task = 0;
    std::int64_t server = 0;
    std::int64_t client = -1;
  };
  std::vector<Update> updates;
};

// Why the job is too large to simulate (its task graph would pass kMaxSimulated tasks), or nothing:
// checked from the counts alone, before anything per server or per task is built.
std::optional<std::string> data_parallel_too_large(std::int64_t workers, std::int64_t clients,
                                                   std::int64_t servers, std::int64_t buckets,
                                                   std::int64_t steps);

// Requires a job that data_parallel_too_large() accepts, workers divisible by client_size, and at
// least two steps.
DataParallelTasks lower_data_parallel(const DataParallelJob& job);

}  // namespace dtsim::parallel
