#include "parallel/mesh.hpp"

#include <algorithm>

namespace dtsim::parallel {

Mesh Mesh::of(const config::Scenario& scenario) {
  const auto& p = scenario.parallelism;
  return Mesh{p.tensor, p.context, p.data, p.pipeline, scenario.node.gpus_per_node};
}

graph::CommGroup Mesh::group(std::int64_t size, std::int64_t stride) const {
  graph::CommGroup g;
  g.size = size;
  if (size <= 1) return g;
  // Members on one node: those whose spread (stride apart) fits in the node, at least one.
  const std::int64_t per_node = std::clamp<std::int64_t>(gpus_per_node / std::max<std::int64_t>(stride, 1), 1, size);
  g.nodes = (size + per_node - 1) / per_node;
  if (size % g.nodes != 0) g.nodes = size;  // irregular spread: count every member as its own node
  // Every GPU of a node belongs to one group of this kind, and they all communicate at once.
  g.concurrent_per_node = std::max<std::int64_t>(1, gpus_per_node / g.ranks_per_node());
  return g;
}

}  // namespace dtsim::parallel
