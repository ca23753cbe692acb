#include "network/analytic_model.hpp"

#include <algorithm>

#include "config/leaf_blocks.hpp"

namespace dtsim::network {

PathParams path_params(const config::Scenario& scenario) {
  const auto& node = scenario.node;
  const auto& fabric = scenario.fabric;
  const auto& net = scenario.cluster.network;
  PathParams p;
  p.intra_bytes_per_s = node.intra_gbytes_per_s * core::kGiga * node.intra_efficiency;
  p.intra_latency_s = node.intra_latency_us * 1e-6;
  if (node.nvls_busbw_gbytes_per_s) p.nvls_bytes_per_s = *node.nvls_busbw_gbytes_per_s * core::kGiga;
  p.node_inter_bytes_per_s = core::gbps_to_bytes_per_s(net.nic_gbps) * net.nics_per_node * fabric.efficiency;
  // Tiers larger than the cluster hold all of it (no overflow for huge values).
  const std::int64_t nodes = scenario.cluster.nodes;
  const config::LeafBlocks leaves = config::leaf_blocks(nodes, net.nodes_per_leaf);
  p.nodes_per_leaf = leaves.nodes_per_leaf;
  if (net.leaves_per_pod && *net.leaves_per_pod < leaves.blocks)
    p.nodes_per_pod = p.nodes_per_leaf * *net.leaves_per_pod;
  p.leaf_oversubscription = net.oversubscription;
  p.core_oversubscription = net.core_oversubscription;
  p.inter_latency_s = (fabric.latency_us + fabric.per_message_overhead_us) * 1e-6;
  if (fabric.per_flow_gbps) p.per_flow_bytes_per_s = core::gbps_to_bytes_per_s(*fabric.per_flow_gbps);
  // NCCL's hop class inside the node, and LL128 only over NVLink (nccl_protocol.hpp).
  const bool nvlink =
      node.intra_kind == config::IntraNodeKind::nvswitch || node.intra_kind == config::IntraNodeKind::nvlink;
  p.intra_hop = nvlink ? HopClass::nvlink : HopClass::pci;
  p.ll128 = nvlink;
  switch (net.protocol) {
    case config::CollectiveProtocol::automatic:
      break;
    case config::CollectiveProtocol::ll:
      p.forced_protocol = Protocol::ll;
      break;
    case config::CollectiveProtocol::ll128:
      p.forced_protocol = Protocol::ll128;
      break;
    case config::CollectiveProtocol::simple:
      p.forced_protocol = Protocol::simple;
      break;
  }
  switch (net.all_reduce_algorithm) {
    case config::AllReduceAlgorithm::automatic:
      break;
    case config::AllReduceAlgorithm::ring:
      p.forced_all_reduce = Algorithm::ring;
      break;
    case config::AllReduceAlgorithm::tree:
      p.forced_all_reduce = Algorithm::tree;
      break;
    case config::AllReduceAlgorithm::hierarchical:
      p.forced_all_reduce = Algorithm::hierarchical;
      break;
    case config::AllReduceAlgorithm::halving_doubling:
      p.forced_all_reduce = Algorithm::halving_doubling;
      break;
    case config::AllReduceAlgorithm::nvls:
      p.forced_all_reduce = Algorithm::nvls;
      break;
  }
  return p;
}

}  // namespace dtsim::network
