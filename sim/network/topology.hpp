// The cluster's network as a graph (Boost.Graph, DESIGN.md "Network model"): vertices for GPUs, each
// node's switch (NVSwitch or PCIe), NICs, leaf, spine and core switches; one directed edge per link
// direction, with the bandwidth and latency of the node and fabric profiles.
//
// Layout (docs/networks.md "Topology"):
//   inside a node   GPU <-> node switch (intra bandwidth x intra efficiency, intra latency on the way
//                   out of the GPU); node switch <-> NIC i (as fast as the intra link: not a bottleneck)
//   fat-tree        every NIC of a node on the node's leaf; `nodes_per_leaf` nodes per leaf
//   rail-optimized  NIC i of every node of a rail group (`nodes_per_leaf` nodes) on the group's leaf i
//   NIC <-> leaf    line rate x fabric efficiency; the fabric's hop latency plus per-message overhead
//                   on the way out of the NIC
//   leaf <-> spine  fat-tree: one spine plane per NIC index; rail-optimized: one plane (a rail leaf holds
//                   one NIC index, and its flows spread over all the pod's spines); a leaf's uplink to
//                   each plane carries its downlink bandwidth / (planes x oversubscription) (a tier's
//                   oversubscription is downlink over uplink bandwidth)
//   spine <-> core  with `leaves_per_pod`: leaves form pods with their own spines; spine k of every pod
//                   on core k with the spine's downlink bandwidth / core_oversubscription
// Routes are shortest paths between NICs over the switches; among equal-cost next hops the one at
// position (selector mod count) in vertex order is taken (ECMP with a deterministic hash: the
// selector is the source NIC's index, which spreads a fat-tree leaf's NICs over the spine planes).
#pragma once

#include <boost/graph/adjacency_list.hpp>
#include <cstdint>
#include <string>
#include <vector>

#include "config/leaf_blocks.hpp"
#include "config/scenario.hpp"

namespace dtsim::network {

enum class VertexKind : std::uint8_t { gpu, node_switch, nic, leaf, spine, core };

struct TopologyVertex {
  VertexKind kind = VertexKind::gpu;
  std::int64_t node = -1;  // the node it belongs to (gpu, node_switch, nic); -1 for fabric switches
  std::int64_t index = 0;  // local index (gpu, nic) or switch number
};

// What a link is (the flow level scales NIC cables by a group's NIC factor: flow_job.hpp): a GPU's NVLink
// port to its node's switch, the switch's path to a NIC, a NIC's cable to its leaf, a leaf's uplink to a
// spine, a spine's to the core.
enum class LinkRole : std::uint8_t { nvlink, node_nic, nic, leaf_uplink, spine_uplink };

struct TopologyLink {
  double bytes_per_s = 0.0;
  double latency_s = 0.0;
  std::size_t id = 0;  // position in Topology::links()
  LinkRole role = LinkRole::nvlink;
};

using TopologyGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, TopologyVertex, TopologyLink>;
using VertexId = std::size_t;

struct TopologyShape {
  config::TopologyKind kind = config::TopologyKind::fat_tree;
  std::int64_t nodes = 1;
  std::int64_t gpus_per_node = 1;
  std::int64_t nics_per_node = 1;
  std::int64_t nodes_per_leaf = 1;
  std::int64_t leaves_per_pod = 1;  // all leaves when the scenario has no pods
  double intra_bytes_per_s = 0.0;
  double intra_latency_s = 0.0;
  double nic_bytes_per_s = 0.0;  // one NIC, achievable
  double nic_latency_s = 0.0;    // hop latency + per-message overhead
  double leaf_oversubscription = 1.0;
  double core_oversubscription = 1.0;
};

TopologyShape topology_shape(const config::Scenario& scenario);

class Topology {
 public:
  explicit Topology(const TopologyShape& shape);

  const TopologyShape& shape() const { return shape_; }
  const TopologyGraph& graph() const { return graph_; }
  std::size_t link_count() const { return links_.size(); }
  const TopologyLink& link(std::size_t id) const { return links_[id]; }
  VertexId gpu(std::int64_t node, std::int64_t local) const;
  VertexId nic(std::int64_t node, std::int64_t local) const;
  // The NIC a GPU uses for inter-node traffic (the one on its PCIe switch): local x NICs / GPUs.
  std::int64_t nearest_nic(std::int64_t local_gpu) const;

  // Links (ids) from one GPU to another: through the node switch inside a node, else out through
  // the source GPU's nearest NIC, over the fabric and in through the destination's nearest NIC.
  // `port` counts NICs from each GPU's nearest (nodes with more NICs than GPUs).
  std::vector<std::size_t> route(std::int64_t src_node, std::int64_t src_gpu, std::int64_t dst_node,
                                 std::int64_t dst_gpu, std::int64_t port = 0) const;

  // Switch tiers a transfer between two nodes climbs: 0 same node, 1 same leaf, 2 same pod (leaf
  // uplinks), 3 across pods (spine uplinks too). NIC indices matter on a rail-optimized fabric.
  int tiers(std::int64_t node_a, std::int64_t nic_a, std::int64_t node_b, std::int64_t nic_b) const;
  std::int64_t leaf_of(std::int64_t node, std::int64_t nic) const;

 private:
  VertexId add_vertex(VertexKind kind, std::int64_t node, std::int64_t index);
  void add_cable(VertexId a, VertexId b, double bytes_per_s, double latency_a_to_b_s, double latency_b_to_a_s,
                 LinkRole role);
  std::vector<std::size_t> fabric_route(VertexId from, VertexId to, std::size_t selector) const;

  // The nodes' blocks under the leaves (shape_.nodes_per_leaf is already at most the node count).
  config::LeafBlocks blocks() const { return config::leaf_blocks(shape_.nodes, shape_.nodes_per_leaf); }
  TopologyShape shape_;
  TopologyGraph graph_;
  std::vector<TopologyLink> links_;
  std::vector<std::vector<std::size_t>> out_links_;  // per vertex: ids of its outgoing links
  std::vector<VertexId> link_target_;
  std::vector<VertexId> gpus_;
  std::vector<VertexId> nics_;
  std::vector<VertexId> node_switches_;
  mutable std::vector<std::vector<int>> hops_to_;  // per NIC vertex: BFS hop counts, filled on demand
  std::vector<std::int64_t> nic_slot_;             // vertex -> NIC slot (node x nics + local), -1 else
};

}  // namespace dtsim::network
