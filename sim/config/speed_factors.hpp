// Nodes and GPUs that run at another speed than their profiles say (scenario key
// cluster.speed_factors; docs/networks.md "Stragglers and degraded links"): a GPU held back by its clocks
// (heat, power capping, a bad fan), a node whose network links came up degraded. Each entry names a node and,
// optionally, one of its GPUs (its index among the GPUs in use on the node: rank = node x GPUs per node +
// gpu), with
//   compute  the factor of its GPUs' speed: every kernel takes 1 / compute times as long (the host that
//            issues them is not slowed);
//   nic      the factor of the node's NIC bandwidth (a node entry only): every transfer across nodes
//            through that node moves at that fraction of its share, and a collective spanning several
//            nodes at the pace of its slowest node (a ring or tree moves in lockstep);
//   nvlink   the factor of the node's NVLink (NVSwitch) bandwidth (a node entry only): every collective
//            with members on that node moves its intra-node part at that fraction (a ring inside the
//            node runs at the pace of its slowest link; NVLink SHARP too);
//   jitter_cv the coefficient of variation of its GPUs' speed from iteration to iteration (a noisy
//            neighbour, thermal or power throttling that comes and goes): in each of
//            simulation.jitter_iterations sampled iterations every kernel of the entry's GPUs takes X
//            times as long, X lognormal with mean 1 and this CV, drawn per (entry, iteration) from the
//            scenario's seed (core/random.hpp; one draw for all GPUs of a node entry). The iteration time
//            is the mean over the samples (results/evaluate.cpp), which every synchronizing collective
//            pushes above the jitter-free time.
// An entry may instead name a leaf switch ("leaf", with no node), with
//   uplink   the factor of the leaf's uplink bandwidth to the spine tier (optics or cables down, links
//            that came up at a lower rate): every group whose nodes are under several leaves, one of
//            them this one, crosses it at the pace of its slowest leaf; the analytic model divides the
//            leaf tier's oversubscription by that factor (network/collective_cost.hpp). Leaves number
//            the nodes in blocks of network.nodes_per_leaf (fat-tree: the nodes' leaf; rail-optimized:
//            the rail group's leaves, all of them).
// Entries that name the same GPU, node or leaf multiply. Only a simulation of every rank can tell one GPU
// from another, so the loader refuses speed factors in symmetric mode and for layer-table workloads (which
// state stragglers in "training"). The flow level costs NIC factors (every NIC cable of a collective at its
// group's slowest factor: network/flow_job.hpp, make_flow_job) and refuses NVLink and uplink factors: a GPU's
// NVLink port there also carries its traffic to the NICs, and it places each group's stand-in on nodes of
// its own choosing, which need not straddle the degraded leaf.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "config/leaf_blocks.hpp"

namespace dtsim::config {

struct SpeedFactor {
  std::int64_t node = 0;            // unused in a leaf entry
  std::optional<std::int64_t> gpu;  // absent: every GPU of the node
  double compute = 1.0;
  double nic = 1.0;
  double jitter_cv = 0.0;
  double nvlink = 1.0;
  std::optional<std::int64_t> leaf = std::nullopt;  // a leaf entry: the leaf switch, and its uplink factor
  double uplink = 1.0;
};

// Per node, the speed factors of the links it sends through (empty vectors: all at the profile's
// speed): its NICs, its NVLink, and its leaf switch's uplinks (with the nodes under one leaf, to tell
// which groups cross leaves).
struct NodeLinkSpeeds {
  std::vector<double> nic = {};
  std::vector<double> nvlink = {};
  std::vector<double> uplink = {};
  LeafBlocks leaves = {};
};

// The largest jitter an entry may state (a CV of 2 means the GPU is at times several times slower).
inline constexpr double kMaxJitterCv = 2.0;

// The largest factor an entry may state (a GPU 10x faster than its profile is a mistake, not a plan).
inline constexpr double kMaxSpeedFactor = 10.0;
// Distinct compute speeds a scenario may give its GPUs (the engine costs each op once per speed).
inline constexpr std::size_t kMaxComputeSpeeds = 64;

// The compute factor of each of `ranks` ranks, `gpus_per_node` to a node (products of the entries that
// name it); empty when every GPU runs at its profile's speed.
std::vector<double> rank_compute_speeds(const std::vector<SpeedFactor>& factors, std::int64_t ranks,
                                        std::int64_t gpus_per_node);
// Whether any entry states jitter.
bool has_jitter(const std::vector<SpeedFactor>& factors);
// The entries as they are in sampled iteration `iteration`: each jittery entry's compute factor divided
// by its lognormal draw for (seed, entry index, iteration), jitter_cv cleared.
std::vector<SpeedFactor> jittered(const std::vector<SpeedFactor>& factors, std::uint64_t seed,
                                  std::int64_t iteration);
// The NIC factor of each of `nodes` nodes; empty when every NIC runs at its profile's speed.
std::vector<double> node_nic_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes);
// The NVLink factor of each of `nodes` nodes; empty when every node's NVLink runs at its profile's speed.
std::vector<double> node_nvlink_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes);
// The uplink factor of each of `nodes` nodes' leaf switch, `nodes_per_leaf` nodes to a leaf; empty when
// every leaf's uplinks run at their profile's speed.
std::vector<double> node_uplink_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes,
                                       std::int64_t nodes_per_leaf);
// All three of the above for a cluster of `nodes` nodes.
NodeLinkSpeeds node_link_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes,
                                std::int64_t nodes_per_leaf);

}  // namespace dtsim::config
