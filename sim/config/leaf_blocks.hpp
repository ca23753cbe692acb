// How the nodes sit under leaf switches (cluster.network.topology.nodes_per_leaf): in blocks of
// nodes_per_leaf consecutive nodes, the last block possibly short, one leaf per block (per block and rail
// on a rail-optimized fabric). One rule for the loader's checks, the network topology, the analytic
// path, the group layouts and the leaf uplink factors.
#pragma once

#include <algorithm>
#include <cstdint>

namespace dtsim::config {

struct LeafBlocks {
  std::int64_t nodes_per_leaf = 1;  // at most the node count, at least 1
  std::int64_t blocks = 1;          // leaf switches (fat-tree), rail groups (rail-optimized)
  std::int64_t block_of(std::int64_t node) const { return node / nodes_per_leaf; }
};

// `nodes` nodes in blocks of `nodes_per_leaf` (a larger value: one block holding every node).
inline LeafBlocks leaf_blocks(std::int64_t nodes, std::int64_t nodes_per_leaf) {
  const std::int64_t per_leaf = std::clamp<std::int64_t>(nodes_per_leaf, 1, std::max<std::int64_t>(1, nodes));
  return {per_leaf, (std::max<std::int64_t>(1, nodes) + per_leaf - 1) / per_leaf};
}

}  // namespace dtsim::config
