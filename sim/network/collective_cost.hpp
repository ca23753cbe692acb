// Alpha-beta cost of collectives over a group laid out on nodes, with NCCL's algorithms and a
// choice among them by predicted time, as NCCL's tuner does (network_collectives reference, Sec. 1).
//
// A group of n ranks on N nodes, r = n/N per node; S is the buffer (CommOp::bytes convention). An
// uneven group (graph::CommGroup::uneven: 12 ranks on two 8-GPU nodes, 8 + 4) takes r from its busiest
// node: a ring still enters and leaves each node once per channel, whatever its members there; the
// tree's chain inside the node and the all-to-all's intra-node part are longest there; the
// all-to-all's traffic leaving a node is the larger of its busiest and its least busy node's;
// halving-doubling, whose partners at distances 1, 2, 4, ... assume the same members on every node,
// does not apply. node_nic is the node's NIC bandwidth times the group's nic_speed (the slowest NIC
// factor among its nodes, cluster.speed_factors): every algorithm moves in lockstep with its slowest link.
// A slow NIC and the switch tiers' divisor (below) do not compound: the node's share is its NICs' times
// min(nic_speed, 1 / divisor), since the slow NIC puts that much less on the uplinks (SimGrid's max-min
// sharing on the flow level gives the same).
// Likewise intra (and NVLink SHARP's bandwidth) is the profile's times the group's nvlink_speed.
// Bus bytes per rank (nccl-tests PERFORMANCE.md): all_reduce 2(n-1)/n S, all_gather and
// reduce_scatter (n-1)/n S, broadcast/reduce S.
//
// all_reduce, NCCL's algorithms (the automatic choice takes the fastest of these):
//   ring          every ring channel crosses each node boundary once, so the node's NICs carry the
//                 bus bytes of all groups running on the node at once:
//                 t = 2(n-1)/n S / min(intra, node_nic / concurrent) + ring latency
//   tree          (N > 1, r > 1; NCCL's Tree, a chain inside the node and a double binary tree across
//                 nodes, and its NVLS-tree) pipelined, the slower part sets the pace: inside the node
//                 2(r-1)/r S / intra', across nodes B_tree / (node_nic/concurrent), B_tree the bytes the
//                 busiest node sends per direction: with two nodes S (each tree has one edge and carries
//                 S/2 up and down it), with more 2S (in two binary trees with the roles swapped, a node
//                 inner in one tree with two children receives 2 x S/2 and sends S/2 up, S/2 and 2 x S/2
//                 down, and as a leaf of the other sends S/2 up and receives S/2: 2S each way; Sanders,
//                 Speck & Traeff, "Two-tree algorithms for full bandwidth broadcast, reduction and scan",
//                 Parallel Computing 35(12), 2009; NCCL's own model gives Tree the ring's algorithm
//                 bandwidth, half its bus bandwidth, and NVLS-tree twice the inter-node bandwidth at
//                 N <= 2, tuning.cc); latency of NCCL's tree 2((r-1) intra_lat + log2(N) inter_lat); intra'
//                 is the NVLink SHARP bandwidth when the node has it (Simple only, as NCCL's NVLS-tree),
//                 else the ring's intra bandwidth; plus the pipeline's fill (below)
//   nvls          (N = 1, NVLink SHARP nodes, Simple only) t = 2(n-1)/n S / nvls + intra latency
// and, forced only (not NCCL's, so never chosen automatically):
//   hierarchical  (N > 1, r > 1) reduce-scatter inside the node, ring all-reduce of S/r per GPU across
//                 nodes, all-gather inside the node (network_collectives reference Sec. 5.4): the
//                 bytes of a ring across nodes (2(N-1)/N S per node), pipelined likewise, with ring
//                 latency across nodes: 2((r-1) intra_lat + (N-1) inter_lat), and the pipeline's fill
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
// 2(n-1), inter steps 2(N-1); all_gather/reduce_scatter: n-1 and N-1. Every ring- and tree-family
// algorithm also pays NCCL's base latency once (nccl_protocol.hpp).
// Pipeline fill: a pipelined algorithm (the tree, hierarchical, the broadcast/reduce chain) cuts the
// buffer into chunks that cross its H network stages one after another. With chunks of c bytes moving
// at the pace's rate b and a per-chunk cost of one hop latency a per stage, the time is
// (S/c + H - 1)(a + c/b); the best c gives S/b + (H-1)a + 2 sqrt(S/b x (H-1)a), the classical
// pipelined-broadcast time (sqrt((H-1)a) + sqrt(S/b))^2 (Chan, Heimlich, Purkayastha & van de Geijn,
// "Collective communication: theory, practice, and experience", CCPE 19(13), 2007, Sec. 5). The fill
// 2 sqrt(pace x network latency) stops growing once a chunk reaches what NCCL keeps in flight per stage,
// kPipelineChunkBytes over all channels: 2 H chunk/b (then the per-chunk costs overlap with the
// transfers of the chunks in flight). Rings pay no fill: their steps already cost one latency each.
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
// A group whose leaves' uplinks are degraded (graph::CommGroup::uplink_speed f < 1, every-rank mode)
// crosses the leaf tier at its slowest leaf's pace: the tier's ratio is oversubscription / f, for each
// tier above the leaf too (a leaf's traffic to the spine and beyond leaves through its uplinks); the
// group climbs the tier whatever its span, since the layout sets f only for groups whose nodes are
// under several leaves.
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

// What NCCL keeps in flight per pipeline stage, all channels together. Fitted jointly with each
// fabric's hop latency and efficiency on three two-node all-reduce logs of three fabrics and NCCL
// versions (InfiniBand NDR, EFA and EFAv2, tests/validation/nccl_logs_scale/manifest.json); it matches
// NCCL's Simple step of 512 KiB (4 MiB buffer / 8 steps) on 24 channels.
inline constexpr double kPipelineChunkBytes = 32.0 * 1024 * 1024;

// The fill of a pipeline (see above): min(2 sqrt(pace_s x net_latency_s), 2 net_stages chunk_s), where
// chunk_s is one kPipelineChunkBytes at the rate of the pace.
double pipeline_fill_s(double pace_s, double net_latency_s, double net_stages, double chunk_s);

// Bytes the busiest node of a tree (or of the hierarchical ring) sends per direction across nodes.
double tree_inter_bytes(Algorithm a, double nodes, double bytes);

CollectiveCost collective_cost(const graph::CommOp& op, const PathParams& path);
inline double collective_time_s(const graph::CommOp& op, const PathParams& path) {
  return collective_cost(op, path).time_s;
}

const char* to_string(Algorithm a);

}  // namespace dtsim::network
