// Alpha-beta cost of collectives over a group laid out on nodes, with NCCL's algorithms and a
// choice among them by predicted time, as NCCL's tuner does (network_collectives reference, Sec. 1).
//
// A group of n ranks on N nodes (r = n/N per node); S is the buffer (CommOp::bytes convention).
// Bus bytes per rank (nccl-tests PERFORMANCE.md): all_reduce 2(n-1)/n S, all_gather and
// reduce_scatter (n-1)/n S, broadcast/reduce S.
//
// all_reduce, the fastest of:
//   ring          every ring channel crosses each node boundary once, so the node's NICs carry the
//                 bus bytes of all groups running on the node at once:
//                 t = 2(n-1)/n S / min(intra, node_nic / concurrent) + ring latency
//   hierarchical  (N > 1, r > 1; NCCL's tree and NVLS-tree) reduce-scatter inside the node, all-reduce
//                 of S/r per GPU across nodes, all-gather inside the node, pipelined so that the slower
//                 phase sets the pace: t = max(2(r-1)/r S / intra', 2(N-1)/N S / (node_nic/concurrent))
//                 + tree latency 2((r-1) intra_lat + log2(N) inter_lat), where intra' is the NVLink
//                 SHARP bandwidth when the node has it, else the ring's intra bandwidth
//   nvls          (N = 1, NVLink SHARP nodes) t = 2(n-1)/n S / nvls + intra latency
// ring latency (NCCL tuning.cc): (steps - inter_steps) intra_lat + inter_steps inter_lat with steps
// 2(n-1), inter steps 2(N-1); all_gather/reduce_scatter: n-1 and N-1.
// all_to_all: each rank sends (n-1)/n S; the (n-r)/n part leaving the node shares the node's NICs.
// send_recv: one transfer over the link joining the two ranks.
// A scenario may force the all-reduce algorithm; where the forced one does not apply to a group
// (hierarchical inside one node, NVLS without NVLink SHARP or across nodes) the ring is used.
// Switch tiers (topology.hpp): a group whose nodes (node_stride apart) all sit under one leaf keeps
// the NICs' bandwidth; one that spans leaves climbs the oversubscribed tier. How much that costs
// depends on the traffic pattern. A ring (ring all-reduce, the hierarchical inter-node rings,
// all-gather, reduce-scatter) leaves a leaf once per channel for each of the stride groups laid out
// under it, while the leaf's uplinks carry nodes_per_leaf x node NICs / oversubscription: the node's
// share is divided by max(1, oversubscription x stride / nodes_per_leaf) (likewise per pod with the
// product of both tiers' ratios). In all-to-all and send/recv every node's traffic leaves the leaf:
// divided by the oversubscription (all-to-all: times the fraction of its peers outside the leaf).
// With one node per leaf (the default) every inter-node transfer is divided by the oversubscription.
#pragma once

#include <optional>

#include "graph/ops.hpp"

namespace dtsim::network {

enum class Algorithm { ring, hierarchical, nvls, direct };

struct PathParams {
  double intra_bytes_per_s = 0.0;              // achievable per GPU per direction inside a node (ring bus bw)
  double intra_latency_s = 0.0;                // per ring step inside a node
  double nvls_bytes_per_s = 0.0;               // all-reduce bus bandwidth with NVLink SHARP; 0 when absent
  double node_inter_bytes_per_s = 0.0;         // achievable per node per direction, all NICs together
  double inter_latency_s = 0.0;                // per step across nodes (hop latency + message overhead)
  double per_flow_bytes_per_s = 0.0;           // cap on one group's inter-node stream (0: none)
  std::optional<Algorithm> forced_all_reduce;  // use this all-reduce algorithm where it applies
  std::int64_t nodes_per_leaf = 1;
  std::int64_t nodes_per_pod = 0;  // 0: one pod (no core tier)
  double leaf_oversubscription = 1.0;
  double core_oversubscription = 1.0;
};

enum class TrafficPattern { ring, all_nodes, all_to_all };

// What the switch tiers crossed by `group` divide its node's NIC bandwidth by (see above).
double fabric_divisor(const graph::CommGroup& group, const PathParams& path, TrafficPattern pattern);

struct CollectiveCost {
  double time_s = 0.0;
  Algorithm algorithm = Algorithm::ring;
};

CollectiveCost collective_cost(const graph::CommOp& op, const PathParams& path);
inline double collective_time_s(const graph::CommOp& op, const PathParams& path) {
  return collective_cost(op, path).time_s;
}

const char* to_string(Algorithm a);

}  // namespace dtsim::network
