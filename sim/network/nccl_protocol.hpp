// NCCL's protocols (LL, LL128, Simple) as NCCL's own tuning model costs them (src/graph/tuning.cc,
// NCCL 2.30.7; network_collectives reference Sec. 1.3-1.6), relative to the profiles' figures.
//
// The node and fabric profiles give the Simple protocol: bandwidths are large-message (Simple)
// measurements or derivations, per-hop latencies NCCL's Simple hop latency or a value fitted on
// MB-to-GB messages. Another protocol p changes both as NCCL's model does:
//   bandwidth  times NCCL's protocol factor over Simple's for the algorithm:
//                ring  LL 0.5 (4 B data + 4 B flag), LL128 0.92, Simple 1
//                tree  LL (1/3.8) / 0.92, LL128 0.92, Simple 1 (NCCL's tree LL128 is 120/128 of the raw
//                      bandwidth against Simple's 0.92, but capped per channel below Simple's cap:
//                      perChMaxTreeLL128Bw / perChMaxTreeBw = 0.81-0.89 on Hopper, 0.83-0.85 on
//                      Ampere for 1-2 nodes; the ring's 0.92 is taken for both families)
//   hop latency the profile's hop latency minus NCCL's per-hop difference hwLat[hw][a][Simple] -
//              hwLat[hw][a][p] (hw: NVLINK or PCI inside the node, NET across nodes; across nodes
//              with one rank per node NCCL takes the Tree row), never below hwLat[hw][a][p] nor above
//              the profile's:
//                         LL    LL128  Simple  (us)
//                NVLINK  Tree   0.6   1.25   4.0    Ring 0.6  1.9  3.4
//                PCI     Tree   1.0   1.9    4.0    Ring 1.0  2.5  5.7
//                NET     Tree   5.0   8.5   14.0    Ring 2.7  4.0 14.0
// The difference, not the ratio, is carried over: a fitted hop latency also holds start-up costs that
// the protocol does not change.
// Base latency: every collective of NCCL's ring or tree family also pays NCCL's base latency
// baseLat[a][p] once (launch and the kernel's setup):
//                         LL    LL128  Simple  (us)
//                Tree     6.8   14.0   8.4
//                Ring     6.6   14.0   8.4
// LL's bus bandwidth is capped across nodes (NCCL's llMaxBw, whole communicator): 39.0 GB/s on two
// nodes, 20.4 GB/s on three or more (the Intel-host row; AMD hosts 22.5 and 19.0, not distinguished).
// Inside one node the cap depends on the GPU generation (39-282 GB/s) and is not represented.
// Not represented: NCCL's tree correction factor by message size (collective_cost.hpp models the
// mid-size regime by the pipeline's fill instead).
// LL128 needs NVLink inside the node (NCCL enables it only for intra paths through NVLink).
// Algorithms that are not NCCL's (halving-doubling) use the Ring rows; NVLS runs Simple only.
#pragma once

#include <cstdint>
#include <optional>

namespace dtsim::network {

enum class Protocol { ll, ll128, simple };

// The hardware class of a hop, NCCL's hwLat rows.
enum class HopClass { nvlink, pci, net };

// NCCL's latency/bandwidth tables are indexed by the tree or ring family of the algorithm.
enum class AlgorithmFamily { tree, ring };

// NCCL's per-hop latency (us), hwLat[hw][family][protocol].
double nccl_hop_latency_us(HopClass hw, AlgorithmFamily family, Protocol protocol);

// NCCL's base latency (us) of a collective, baseLat[family][protocol].
double nccl_base_latency_us(AlgorithmFamily family, Protocol protocol);

// LL's bus bandwidth cap on a communicator spanning `nodes` nodes (infinite on one node).
double nccl_ll_max_bytes_per_s(std::int64_t nodes);

// Achievable bandwidth of `protocol` as a fraction of Simple's.
double protocol_bandwidth_fraction(AlgorithmFamily family, Protocol protocol);

// The hop latency under `protocol` given the profile's (Simple) hop latency (see above).
double protocol_hop_latency_s(double simple_latency_s, HopClass hw, AlgorithmFamily family,
                              Protocol protocol);

const char* to_string(Protocol p);

}  // namespace dtsim::network
