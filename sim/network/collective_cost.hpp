// Alpha-beta cost of collectives over a group laid out on nodes, with NCCL's algorithms and a
// choice among them by predicted time, as NCCL's tuner does (network_collectives reference, Sec. 1).
//
// A group of n ranks on N nodes, r = n/N per node; S is the buffer (CommOp::bytes convention). An
// uneven group (graph::CommGroup::uneven: 12 ranks on two 8-GPU nodes, 8 + 4) takes r from its busiest
// node: a ring still enters and leaves each node once per channel, whatever its members there; the
// tree's chain inside the node and the all-to-all's intra-node part are longest there; the
// all-to-all's traffic leaving a node is the larger of its busiest and its least busy node's;
// halving-doubling, whose partners at distances 1, 2, 4, ... assume the same members on every node,
// does not apply.
// Bus bytes per rank (nccl-tests PERFORMANCE.md): all_reduce 2(n-1)/n S, all_gather and
// reduce_scatter (n-1)/n S, broadcast/reduce S.
//
// all_reduce, NCCL's algorithms (the automatic choice takes the fastest of these):
//   ring          every ring channel crosses each node boundary once, so the node's NICs carry the
//                 bus bytes of all groups running on the node at once:
//                 t = 2(n-1)/n S / min(intra, node_nic / concurrent) + ring latency
//   tree          (N > 1, r > 1; NCCL's Tree, a chain inside the node and a double binary tree across
//                 nodes, and its NVLS-tree) pipelined, the slower part sets the pace: inside the node
//                 2(r-1)/r S / intra', across nodes 2(N-1)/N S / (node_nic/concurrent) (the bytes an
//                 average node of the two trees sends: each tree carries S/2 up and down its N-1
//                 edges); latency of NCCL's tree 2((r-1) intra_lat + log2(N) inter_lat); intra' is the
//                 NVLink SHARP bandwidth when the node has it (Simple only, as NCCL's NVLS-tree), else
//                 the ring's intra bandwidth
//   nvls          (N = 1, NVLink SHARP nodes, Simple only) t = 2(n-1)/n S / nvls + intra latency
// and, forced only (not NCCL's, so never chosen automatically):
//   hierarchical  (N > 1, r > 1) reduce-scatter inside the node, ring all-reduce of S/r per GPU across
//                 nodes, all-gather inside the node (network_collectives reference Sec. 5.4): the same
//                 bytes as the tree, pipelined likewise, with ring latency across nodes:
//                 2((r-1) intra_lat + (N-1) inter_lat)
//   halving_doubling  (Rabenseifner; Thakur, Rabenseifner & Gropp, IJHPCA 2005; n a power of two)
//                 recursive-halving reduce-scatter then recursive-doubling all-gather, partners at
//                 distance 1, 2, 4, ... (inside the node first): log2 r steps inside the node and
//                 log2 N across, each twice, one after another:
//                 t = 2 (log2 r intra_lat + log2 N inter_lat) + 2(r-1)/r S / intra
//                     + 2(N-1)/N S / (node_nic/concurrent)
// Each algorithm is costed under each protocol (nccl_protocol.hpp: bandwidth fraction and hop latency
// of LL, LL128, Simple) and the fastest (algorithm, protocol) pair is taken, as NCCL's tuner does; a
// scenario may force either. all_gather, reduce_scatter, broadcast, reduce: the ring under the fastest
// protocol. all_to_all and send_recv: Simple.
// ring latency (NCCL tuning.cc): (steps - inter_steps) intra_lat + inter_steps inter_lat with steps
// 2(n-1), inter steps 2(N-1); all_gather/reduce_scatter: n-1 and N-1.
// all_to_all: each rank sends (n-1)/n S; the (n-r)/n part leaving the node shares the node's NICs.
// send_recv: one transfer over the link joining the two ranks.
// A scenario may force the all-reduce algorithm; where the forced one does not apply to a group
// (tree or hierarchical inside one node, NVLS without NVLink SHARP or across nodes, halving-doubling
// on a group that is not a power of two) the ring is used. A forced protocol that does not apply
// (LL128 without NVLink in the node, LL or LL128 with NVLS) gives Simple.
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
#include "network/nccl_protocol.hpp"

namespace dtsim::network {

enum class Algorithm { ring, tree, hierarchical, nvls, halving_doubling, direct };

struct PathParams {
  double intra_bytes_per_s = 0.0;              // achievable per GPU per direction inside a node (ring bus bw)
  double intra_latency_s = 0.0;                // per ring step inside a node
  double nvls_bytes_per_s = 0.0;               // all-reduce bus bandwidth with NVLink SHARP; 0 when absent
  double node_inter_bytes_per_s = 0.0;         // achievable per node per direction, all NICs together
  double inter_latency_s = 0.0;                // per step across nodes (hop latency + message overhead)
  double per_flow_bytes_per_s = 0.0;           // cap on one group's inter-node stream (0: none)
  std::optional<Algorithm> forced_all_reduce;  // use this all-reduce algorithm where it applies
  std::optional<Protocol> forced_protocol;     // use this protocol where it applies
  HopClass intra_hop = HopClass::nvlink;       // NCCL's latency row for hops inside the node
  bool ll128 = true;                           // LL128 available (NVLink inside the node)
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
  Protocol protocol = Protocol::simple;
};

// The hop latencies of `protocol` for `algorithm`'s family (nccl_protocol.hpp); `one_per_node`: one
// rank per node (NCCL then takes the Tree row across nodes).
struct HopLatencies {
  double intra_s = 0.0;
  double inter_s = 0.0;
};
HopLatencies hop_latencies(const PathParams& path, Algorithm algorithm, Protocol protocol, bool one_per_node);
AlgorithmFamily family_of(Algorithm a);

CollectiveCost collective_cost(const graph::CommOp& op, const PathParams& path);
inline double collective_time_s(const graph::CommOp& op, const PathParams& path) {
  return collective_cost(op, path).time_s;
}

const char* to_string(Algorithm a);

}  // namespace dtsim::network
