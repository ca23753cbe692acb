#include "parallel/mesh.hpp"

#include <algorithm>
#include <iterator>
#include <map>
#include <vector>

#include "core/errors.hpp"

namespace dtsim::parallel {

namespace {

std::int64_t coordinate(const Coord& c, config::MeshDim d) {
  switch (d) {
    case config::MeshDim::tensor:
      return c.tensor;
    case config::MeshDim::context:
      return c.context;
    case config::MeshDim::data:
      return c.data;
    case config::MeshDim::pipeline:
      return c.stage;
  }
  return 0;
}

}  // namespace

Mesh Mesh::of(const config::Scenario& scenario) {
  const auto& p = scenario.parallelism;
  Mesh m;
  m.degree_[static_cast<int>(config::MeshDim::tensor)] = p.tensor;
  m.degree_[static_cast<int>(config::MeshDim::context)] = p.context;
  m.degree_[static_cast<int>(config::MeshDim::data)] = p.data;
  m.degree_[static_cast<int>(config::MeshDim::pipeline)] = p.pipeline;
  std::int64_t stride = 1;
  for (const config::MeshDim d : p.order) {
    m.stride_[static_cast<int>(d)] = stride;
    stride *= m.degree(d);
  }
  m.gpus_per_node_ = scenario.node.gpus_per_node;
  return m;
}

std::int64_t Mesh::size() const {
  std::int64_t n = 1;
  for (const std::int64_t d : degree_) n *= d;
  return n;
}

std::int64_t Mesh::rank_of(const Coord& c) const {
  std::int64_t r = 0;
  for (int d = 0; d < config::kMeshDims; ++d) r += coordinate(c, static_cast<config::MeshDim>(d)) * stride_[d];
  return r;
}

Coord Mesh::coord_of(std::int64_t rank) const {
  const auto at = [&](config::MeshDim d) { return rank / stride(d) % degree(d); };
  return Coord{at(config::MeshDim::pipeline), at(config::MeshDim::tensor), at(config::MeshDim::context),
               at(config::MeshDim::data)};
}

graph::CommGroup Mesh::group(std::initializer_list<config::MeshDim> dims) const {
  std::vector<std::int64_t> ranks{0};
  for (const config::MeshDim d : dims) {
    const std::size_t before = ranks.size();
    for (std::int64_t i = 1; i < degree(d); ++i) {
      for (std::size_t k = 0; k < before; ++k) ranks.push_back(ranks[k] + i * stride(d));
    }
  }
  return layout(ranks.data(), static_cast<std::int64_t>(ranks.size()));
}

graph::CommGroup Mesh::neighbours(config::MeshDim d) const {
  if (degree(d) <= 1) return graph::CommGroup{};
  const std::int64_t ranks[2] = {0, stride(d)};
  return layout(ranks, 2);
}

graph::CommGroup Mesh::layout(const std::int64_t* ranks, std::int64_t count) const {
  graph::CommGroup g;
  g.size = count;
  if (count <= 1) return g;
  std::map<std::int64_t, std::int64_t> per_node;
  for (std::int64_t i = 0; i < count; ++i) ++per_node[ranks[i] / gpus_per_node_];
  std::int64_t most = 0;
  for (const auto& [node, members] : per_node) most = std::max(most, members);
  DTSIM_CHECK(count % most == 0, "a communication group is spread unevenly over nodes");
  g.nodes = count / most;
  // Every GPU of a node belongs to one group of this kind, and they all communicate at once.
  g.concurrent_per_node = std::max<std::int64_t>(1, gpus_per_node_ / most);
  // Nodes evenly spaced: their common spacing; otherwise 1 (taken as adjacent).
  if (per_node.size() >= 2) {
    const std::int64_t step = std::next(per_node.begin())->first - per_node.begin()->first;
    std::int64_t expected = per_node.begin()->first;
    bool even = true;
    for (const auto& entry : per_node) {
      even = even && entry.first == expected;
      expected += step;
    }
    if (even) g.node_stride = step;
  }
  return g;
}

}  // namespace dtsim::parallel
