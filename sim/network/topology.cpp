#include "network/topology.hpp"

#include <algorithm>
#include <boost/graph/breadth_first_search.hpp>
#include <boost/graph/filtered_graph.hpp>
#include <limits>

#include "core/errors.hpp"
#include "core/units.hpp"

namespace dtsim::network {

TopologyShape topology_shape(const config::Scenario& scenario) {
  const auto& net = scenario.cluster.network;
  TopologyShape s;
  s.kind = net.topology;
  s.nodes = scenario.cluster.nodes;
  s.gpus_per_node = scenario.node.gpus_per_node;
  s.nics_per_node = net.nics_per_node;
  const config::LeafBlocks leaves = config::leaf_blocks(s.nodes, net.nodes_per_leaf);
  s.nodes_per_leaf = leaves.nodes_per_leaf;
  s.leaves_per_pod = net.leaves_per_pod ? std::min(*net.leaves_per_pod, leaves.blocks) : leaves.blocks;
  s.intra_bytes_per_s = scenario.node.intra_gbytes_per_s * core::kGiga * scenario.node.intra_efficiency;
  s.intra_latency_s = scenario.node.intra_latency_us * 1e-6;
  s.nic_bytes_per_s = core::gbps_to_bytes_per_s(net.nic_gbps) * scenario.fabric.efficiency;
  s.nic_latency_s = (scenario.fabric.latency_us + scenario.fabric.per_message_overhead_us) * 1e-6;
  s.leaf_oversubscription = net.oversubscription;
  s.core_oversubscription = net.leaves_per_pod ? net.core_oversubscription : 1.0;
  return s;
}

VertexId Topology::add_vertex(VertexKind kind, std::int64_t node, std::int64_t index) {
  const VertexId v = boost::add_vertex(TopologyVertex{kind, node, index}, graph_);
  out_links_.emplace_back();
  nic_slot_.push_back(-1);
  return v;
}

void Topology::add_cable(VertexId a, VertexId b, double bytes_per_s, double latency_a_to_b_s,
                         double latency_b_to_a_s, LinkRole role) {
  for (const auto& [from, to, latency] :
       {std::tuple{a, b, latency_a_to_b_s}, std::tuple{b, a, latency_b_to_a_s}}) {
    const TopologyLink link{bytes_per_s, latency, links_.size(), role};
    boost::add_edge(from, to, link, graph_);
    links_.push_back(link);
    link_target_.push_back(to);
    out_links_[from].push_back(link.id);
  }
}

Topology::Topology(const TopologyShape& shape) : shape_(shape) {
  const std::int64_t nodes = shape.nodes;
  const std::int64_t nics = shape.nics_per_node;
  const bool rails = shape.kind == config::TopologyKind::rail_optimized;
  DTSIM_CHECK(nodes >= 1 && nics >= 1 && shape.nodes_per_leaf >= 1 && shape.leaves_per_pod >= 1,
              "topology shape out of range");
  for (std::int64_t n = 0; n < nodes; ++n) {
    const VertexId sw = add_vertex(VertexKind::node_switch, n, 0);
    node_switches_.push_back(sw);
    for (std::int64_t g = 0; g < shape.gpus_per_node; ++g) {
      const VertexId gpu_v = add_vertex(VertexKind::gpu, n, g);
      gpus_.push_back(gpu_v);
      add_cable(gpu_v, sw, shape.intra_bytes_per_s, shape.intra_latency_s, 0.0, LinkRole::nvlink);
    }
    for (std::int64_t i = 0; i < nics; ++i) {
      const VertexId nic_v = add_vertex(VertexKind::nic, n, i);
      nic_slot_[nic_v] = n * nics + i;
      nics_.push_back(nic_v);
      add_cable(sw, nic_v, shape.intra_bytes_per_s, 0.0, 0.0, LinkRole::node_nic);
    }
  }
  // Leaves: fat-tree one per group of nodes_per_leaf nodes; rail-optimized one per (group, rail).
  const std::int64_t groups = blocks().blocks;
  const std::int64_t leaves = rails ? groups * nics : groups;
  const std::int64_t ports_per_leaf = rails ? shape.nodes_per_leaf : shape.nodes_per_leaf * nics;
  std::vector<VertexId> leaf_v;
  for (std::int64_t l = 0; l < leaves; ++l) leaf_v.push_back(add_vertex(VertexKind::leaf, -1, l));
  for (std::int64_t n = 0; n < nodes; ++n) {
    for (std::int64_t i = 0; i < nics; ++i) {
      add_cable(nics_[static_cast<std::size_t>(n * nics + i)],
                leaf_v[static_cast<std::size_t>(leaf_of(n, i))], shape.nic_bytes_per_s, shape.nic_latency_s,
                0.0, LinkRole::nic);
    }
  }
  if (leaves <= 1) return;
  // Spine planes in every pod of leaves_per_pod leaves (rail groups): on a fat-tree one per NIC index
  // (each leaf holds every index, so the source NIC's index spreads a leaf's traffic over its uplinks);
  // on a rail-optimized fabric one, the pod's spines as one switch (a rail leaf holds one NIC index, and
  // ECMP spreads its flows over every spine it is cabled to).
  const std::int64_t planes = rails ? 1 : nics;
  const std::int64_t pod_groups = std::min(shape.leaves_per_pod, groups);
  const std::int64_t pods = (groups + pod_groups - 1) / pod_groups;
  const double leaf_up_bytes_per_s = static_cast<double>(ports_per_leaf) * shape.nic_bytes_per_s /
                                     (static_cast<double>(planes) * shape.leaf_oversubscription);
  std::vector<VertexId> spine_v;
  for (std::int64_t p = 0; p < pods; ++p) {
    for (std::int64_t k = 0; k < planes; ++k)
      spine_v.push_back(add_vertex(VertexKind::spine, -1, p * planes + k));
  }
  for (std::int64_t l = 0; l < leaves; ++l) {
    const std::int64_t pod = (rails ? l / nics : l) / pod_groups;
    for (std::int64_t k = 0; k < planes; ++k) {
      add_cable(leaf_v[static_cast<std::size_t>(l)], spine_v[static_cast<std::size_t>(pod * planes + k)],
                leaf_up_bytes_per_s, 0.0, 0.0, LinkRole::leaf_uplink);
    }
  }
  if (pods <= 1) return;
  const std::int64_t leaves_in_pod = rails ? pod_groups * nics : pod_groups;
  const double spine_up_bytes_per_s =
      static_cast<double>(leaves_in_pod) * leaf_up_bytes_per_s / shape.core_oversubscription;
  for (std::int64_t k = 0; k < planes; ++k) {
    const VertexId core_v = add_vertex(VertexKind::core, -1, k);
    for (std::int64_t p = 0; p < pods; ++p) {
      add_cable(spine_v[static_cast<std::size_t>(p * planes + k)], core_v, spine_up_bytes_per_s, 0.0, 0.0,
                LinkRole::spine_uplink);
    }
  }
}

VertexId Topology::gpu(std::int64_t node, std::int64_t local) const {
  return gpus_[static_cast<std::size_t>(node * shape_.gpus_per_node + local)];
}

VertexId Topology::nic(std::int64_t node, std::int64_t local) const {
  return nics_[static_cast<std::size_t>(node * shape_.nics_per_node + local)];
}

std::int64_t Topology::nearest_nic(std::int64_t local_gpu) const {
  return local_gpu * shape_.nics_per_node / shape_.gpus_per_node;
}

std::int64_t Topology::leaf_of(std::int64_t node, std::int64_t nic_index) const {
  const std::int64_t group = blocks().block_of(node);
  return shape_.kind == config::TopologyKind::rail_optimized ? group * shape_.nics_per_node + nic_index
                                                             : group;
}

int Topology::tiers(std::int64_t node_a, std::int64_t nic_a, std::int64_t node_b, std::int64_t nic_b) const {
  if (node_a == node_b) return 0;
  if (leaf_of(node_a, nic_a) == leaf_of(node_b, nic_b)) return 1;
  const std::int64_t groups_per_pod = shape_.leaves_per_pod;
  return blocks().block_of(node_a) / groups_per_pod == blocks().block_of(node_b) / groups_per_pod ? 2 : 3;
}

namespace {

// Only switches and NICs carry fabric routes: a route never passes through a node.
struct FabricOnly {
  const TopologyGraph* graph = nullptr;
  bool operator()(VertexId v) const {
    const VertexKind k = (*graph)[v].kind;
    return k != VertexKind::gpu && k != VertexKind::node_switch;
  }
};

}  // namespace

std::vector<std::size_t> Topology::fabric_route(VertexId from, VertexId to, std::size_t selector) const {
  if (hops_to_.empty()) hops_to_.resize(nics_.size());
  auto& hops = hops_to_[static_cast<std::size_t>(nic_slot_[to])];
  if (hops.empty()) {
    // Hop counts to `to`: every cable runs both ways, so a search from `to` gives them.
    hops.assign(boost::num_vertices(graph_), std::numeric_limits<int>::max());
    const boost::filtered_graph<TopologyGraph, boost::keep_all, FabricOnly> fabric(graph_, boost::keep_all{},
                                                                                   FabricOnly{&graph_});
    std::vector<std::size_t> distance(boost::num_vertices(graph_), 0);
    boost::breadth_first_search(
        fabric, to,
        boost::visitor(
            boost::make_bfs_visitor(boost::record_distances(distance.data(), boost::on_tree_edge{})))
            .color_map(boost::make_iterator_property_map(
                std::vector<boost::default_color_type>(boost::num_vertices(graph_)).begin(),
                boost::get(boost::vertex_index, graph_))));
    for (std::size_t v = 0; v < distance.size(); ++v) {
      if (distance[v] > 0 || v == to) hops[v] = static_cast<int>(distance[v]);
    }
  }
  DTSIM_CHECK(hops[from] != std::numeric_limits<int>::max(), "no route between two NICs");
  std::vector<std::size_t> path;
  VertexId at = from;
  while (at != to) {
    std::vector<std::size_t> next;  // links one hop closer, in vertex order
    for (const std::size_t id : out_links_[at]) {
      const VertexId t = link_target_[id];
      if (hops[t] == hops[at] - 1 && (t == to || (graph_[t].kind != VertexKind::nic))) next.push_back(id);
    }
    DTSIM_CHECK(!next.empty(), "broken shortest-path walk");
    std::sort(next.begin(), next.end(),
              [&](std::size_t a, std::size_t b) { return link_target_[a] < link_target_[b]; });
    const std::size_t pick = next[selector % next.size()];
    path.push_back(pick);
    at = link_target_[pick];
  }
  return path;
}

std::vector<std::size_t> Topology::route(std::int64_t src_node, std::int64_t src_gpu, std::int64_t dst_node,
                                         std::int64_t dst_gpu, std::int64_t port) const {
  // gpu -> node switch is the GPU's first link; node switch -> gpu the second link of the switch's
  // cable to it (cables are added as pairs: a->b then b->a).
  const auto first_link = [&](VertexId v) { return out_links_[v].front(); };
  const VertexId src = gpu(src_node, src_gpu);
  const VertexId dst = gpu(dst_node, dst_gpu);
  std::vector<std::size_t> path{first_link(src)};
  if (src_node != dst_node) {
    const std::int64_t out_nic = (nearest_nic(src_gpu) + port) % shape_.nics_per_node;
    const std::int64_t in_nic = (nearest_nic(dst_gpu) + port) % shape_.nics_per_node;
    const VertexId a = nic(src_node, out_nic);
    const VertexId b = nic(dst_node, in_nic);
    const VertexId src_sw = node_switches_[static_cast<std::size_t>(src_node)];
    const VertexId dst_sw = node_switches_[static_cast<std::size_t>(dst_node)];
    for (const std::size_t id : out_links_[src_sw]) {
      if (link_target_[id] == a) path.push_back(id);
    }
    const std::vector<std::size_t> mid = fabric_route(a, b, static_cast<std::size_t>(out_nic));
    path.insert(path.end(), mid.begin(), mid.end());
    for (const std::size_t id : out_links_[b]) {
      if (link_target_[id] == dst_sw) path.push_back(id);
    }
  }
  for (const std::size_t id : out_links_[node_switches_[static_cast<std::size_t>(dst_node)]]) {
    if (link_target_[id] == dst) path.push_back(id);
  }
  return path;
}

}  // namespace dtsim::network
