// A collective as point-to-point transfers for the flow-level model (DESIGN.md "Network model"):
// the group and every other group of its kind, laid out on the cluster as the rank mesh places them,
// move their data at once, step by step.
//
// Placement: a group of n ranks on N nodes, `node_stride` apart, r = n/N per node; groups of its kind
// tile the cluster in blocks of N nodes (period stride x N), c = concurrent_per_node groups per block,
// group j on local GPUs j, j + c, ... (ranks of faster mesh dimensions in between).
// An uneven group (graph::CommGroup::uneven) is placed evenly, with r = min(its busiest node's
// members, GPUs per node / c) on each of its N nodes, so that the c groups sharing a node's NICs fit
// on it: its rings enter and leave each node once per channel as the real group's do
// (collective_cost.hpp), in the steps and chunks of the real group's n members.
// Algorithms (NCCL's, as in collective_cost.hpp):
//   ring          ch = max(1, min(r, NICs / c)) channels; channel k visits a node's members from
//                 member k r / ch, alternately forwards and backwards from node to node, so that every
//                 inter-node hop joins GPUs of the same local index (rail-aligned, as NCCL's rings);
//                 each step every rank sends S / (n ch) per channel; all-reduce 2(n-1) steps,
//                 all-gather / reduce-scatter n-1, broadcast / reduce one step of S (pipelined)
//   tree, hierarchical  inside the node: a ring of the r members, 2(r-1) steps of S/r (NVLink SHARP
//                 nodes: the in-switch reduction at its bus bandwidth, costed as in collective_cost.hpp);
//                 across nodes: r rings of N nodes (one per member, each through its own NIC), 2(N-1)
//                 steps of B/(2(N-1)r), B the bytes the busiest node sends (collective_cost.hpp's
//                 tree_inter_bytes: the tree's busiest node, or the ring's), with the latency of
//                 NCCL's tree (2 log2 N hops) or of the ring (2(N-1) hops); the two are pipelined: the
//                 slower sets the pace; the inter-node phase fills the pipeline (collective_cost.hpp)
//   halving_doubling  rank i = node x r + local; for distance d = 1, 2, 4, ... n/2 one phase in which
//                 every rank sends S/(2d) to rank i xor d, twice (reduce-scatter, then all-gather in
//                 reverse order), phases one after another
//   nvls          inside one node: the in-switch reduction (collective_cost.hpp), nothing to simulate
//   all-to-all    every member sends S/n to each peer of its node, and r S/n to the member of the same
//                 local index on every other node (rail-aligned), all at once
//   send/recv     member to member, S bytes
// Groups inside one node only contend inside that node: the plan holds one node's groups.
// Nodes with more NICs than GPUs (AWS p5: 32 EFA NICs for 8 GPUs) spread every inter-node transfer
// evenly over the NICs / GPUs NICs next to its GPU, as NCCL does with its NICs per GPU.
// Fabrics that cap one flow (kernel TCP) cap a group's inter-node stream, split over its flows.
// Protocol (nccl_protocol.hpp): every step's transfer time is divided by the protocol's bandwidth
// fraction and every phase's hop latency scaled by the protocol's hop latencies over the profile's,
// weighted by the phase's intra- and inter-node transfers.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/ops.hpp"
#include "network/collective_cost.hpp"
#include "network/topology.hpp"

namespace dtsim::network {

struct Transfer {
  std::int64_t src_node = 0;
  std::int64_t src_gpu = 0;
  std::int64_t dst_node = 0;
  std::int64_t dst_gpu = 0;
  double bytes = 0.0;
  double rate_cap_bytes_per_s = 0.0;  // 0: none
  std::int64_t port = 0;              // which of the GPU's NICs, counted from its nearest (topology.hpp)
  double share = 1.0;                 // the part of one transfer this is (a transfer spread over ports)
};

// Transfers that run at once. One step costs the time they take sharing the links; the phase takes
// `steps` of them plus `latency_hops` route latencies. A ring's data cross its hops one after another,
// as NCCL's latency model counts them: its latency_hops - inter_hops steps inside a node at the mean
// route latency of its transfers inside a node, its inter_hops steps across nodes at the mean of those
// between nodes; a one-step phase waits for its slowest route.
struct FlowPhase {
  double steps = 1.0;
  double latency_hops = 1.0;
  std::vector<Transfer> transfers;
  bool ring = false;
  double inter_hops = 0.0;     // ring: of latency_hops, the steps that cross nodes
  double latency_scale = 1.0;  // the protocol's hop latency over the profile's (slowest route)
  double intra_scale = 1.0;    // ring: likewise, inside a node
  double inter_scale = 1.0;    // ring: NCCL's network hop over the profile's route between nodes
};

// What SimGrid measured for one phase: one step's transfer time and the hop latency (a ring's: inside
// a node and across nodes).
struct PhaseTime {
  double transfer_s = 0.0;
  double latency_s = 0.0;
  double inter_latency_s = 0.0;
};

struct FlowPlan {
  std::vector<FlowPhase> phases;
  bool pipelined = false;     // transfers of the phases overlap (the slowest sets the pace), latencies add
  double fixed_time_s = 0.0;  // a part costed outside the flows (in-switch reduction), pipelined likewise
  double bandwidth_fraction = 1.0;  // the protocol's (nccl_protocol.hpp)
  double base_latency_s = 0.0;      // NCCL's base latency of the algorithm and protocol
  // A pipelined plan's fill (collective_cost.hpp): the phase whose stages fill the pipeline, how many,
  // and the bytes one member sends through it (for the time of one chunk at its rate). No fill: -1.
  int fill_phase = -1;
  double fill_stages = 0.0;
  double fill_bytes = 0.0;
};

// The plan of `op` with the algorithm and protocol of `choice` (collective_cost's).
FlowPlan plan_collective(const graph::CommOp& op, const CollectiveCost& choice, const TopologyShape& shape,
                         const PathParams& path);

// Its time given what each phase measured.
double plan_time_s(const FlowPlan& plan, const std::vector<PhaseTime>& measured);

}  // namespace dtsim::network
