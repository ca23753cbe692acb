// Alpha-beta cost of collectives over a group laid out on nodes (ring algorithms, as NCCL runs them
// for large messages).
//
// A group of n ranks on N nodes (r = n/N per node). Ring collectives move "bus bytes" through every
// rank (NCCL's bus-bandwidth convention, nccl-tests PERFORMANCE.md):
//   all_reduce        2(n-1)/n * S        all_gather / reduce_scatter   (n-1)/n * S   (S: full buffer)
//   broadcast/reduce  S (pipelined ring)
// Bus bandwidth: inside one node, the GPU's intra-node link; across nodes, every ring channel crosses
// each node boundary, so the node's NICs carry the bus bytes of all groups running on that node at
// once:  busbw = min(intra, node_nic / concurrent_groups_per_node) (NCCL topology search; see
// network_collectives reference, "Flat NCCL ring over N nodes").
// Latency (NCCL tuning.cc model): (steps - inter_steps) * intra_latency + inter_steps * inter_latency,
// with steps 2(n-1) for all_reduce and n-1 for all_gather/reduce_scatter, inter_steps 2(N-1) / N-1.
// all_to_all: each rank sends (n-1)/n * S; the (n-r)/n part leaving the node shares the node's NICs.
// send_recv: one transfer over the link joining the two ranks.
#pragma once

#include "graph/ops.hpp"

namespace dtsim::network {

struct PathParams {
  double intra_bytes_per_s = 0.0;       // achievable per GPU per direction inside a node
  double intra_latency_s = 0.0;         // per ring step inside a node
  double node_inter_bytes_per_s = 0.0;  // achievable per node per direction, all NICs together
  double inter_latency_s = 0.0;         // per ring step across nodes (hop latency + message overhead)
  double per_flow_bytes_per_s = 0.0;    // cap on one rank's inter-node stream (0: none)
};

double collective_time_s(const graph::CommOp& op, const PathParams& path);

}  // namespace dtsim::network
