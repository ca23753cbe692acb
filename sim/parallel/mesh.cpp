#include "parallel/mesh.hpp"

#include <algorithm>

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
  m.expert_ = p.expert;
  m.folded_ = p.folded_experts();
  return m;
}

std::int64_t Mesh::size() const {
  std::int64_t n = 1;
  for (const std::int64_t d : degree_) n *= d;
  return n;
}

std::int64_t Mesh::rank_of(const Coord& c) const {
  std::int64_t r = 0;
  for (int d = 0; d < config::kMeshDims; ++d)
    r += coordinate(c, static_cast<config::MeshDim>(d)) * stride_[d];
  return r;
}

Coord Mesh::coord_of(std::int64_t rank) const {
  const auto at = [&](config::MeshDim d) { return rank / stride(d) % degree(d); };
  return Coord{at(config::MeshDim::pipeline), at(config::MeshDim::tensor), at(config::MeshDim::context),
               at(config::MeshDim::data)};
}

std::int64_t Mesh::folded_index(const Coord& c) const {
  return c.tensor + degree(config::MeshDim::tensor) * (c.context + degree(config::MeshDim::context) * c.data);
}

Coord Mesh::folded_coord(std::int64_t stage, std::int64_t j) const {
  const std::int64_t t = degree(config::MeshDim::tensor);
  const std::int64_t cp = degree(config::MeshDim::context);
  return Coord{stage, j % t, j / t % cp, j / (t * cp)};
}

std::int64_t Mesh::first_member(std::int64_t r, GroupKind kind) const {
  const Coord c = coord_of(r);
  if (folded_ && (kind == GroupKind::expert || kind == GroupKind::expert_data)) {
    return rank_of(folded_coord(c.stage, folded_first(folded_index(c), kind)));
  }
  switch (kind) {
    case GroupKind::tensor:
      return r - c.tensor * stride(config::MeshDim::tensor);
    case GroupKind::context:
      return r - c.context * stride(config::MeshDim::context);
    case GroupKind::data:
      return r - c.data * stride(config::MeshDim::data) - c.context * stride(config::MeshDim::context);
    case GroupKind::expert:
      return r - c.data % expert_ * stride(config::MeshDim::data);
    case GroupKind::expert_data:
      return r - c.data / expert_ * expert_ * stride(config::MeshDim::data) -
             c.context * stride(config::MeshDim::context);
  }
  return r;
}

void Mesh::group_members(const Coord& c, GroupKind kind, std::vector<std::int64_t>& out) const {
  out.clear();
  if (folded_ && (kind == GroupKind::expert || kind == GroupKind::expert_data)) {
    // expert: the block of e places from its first; expert_data: every e-th place of the stage.
    const bool block = kind == GroupKind::expert;
    const std::int64_t first = folded_first(folded_index(c), kind);
    const std::int64_t end = block ? first + expert_ : size() / degree(config::MeshDim::pipeline);
    for (std::int64_t i = first; i < end; i += block ? 1 : expert_)
      out.push_back(rank_of(folded_coord(c.stage, i)));
    std::sort(out.begin(), out.end());
    return;
  }
  Coord m = c;
  switch (kind) {
    case GroupKind::tensor:
      for (m.tensor = 0; m.tensor < degree(config::MeshDim::tensor); ++m.tensor) out.push_back(rank_of(m));
      break;
    case GroupKind::context:
      for (m.context = 0; m.context < degree(config::MeshDim::context); ++m.context)
        out.push_back(rank_of(m));
      break;
    case GroupKind::data:
      for (m.data = 0; m.data < degree(config::MeshDim::data); ++m.data) {
        for (m.context = 0; m.context < degree(config::MeshDim::context); ++m.context) {
          out.push_back(rank_of(m));
        }
      }
      break;
    case GroupKind::expert: {
      const std::int64_t block = c.data - c.data % expert_;
      for (m.data = block; m.data < block + expert_; ++m.data) out.push_back(rank_of(m));
      break;
    }
    case GroupKind::expert_data:
      for (m.data = c.data % expert_; m.data < degree(config::MeshDim::data); m.data += expert_) {
        for (m.context = 0; m.context < degree(config::MeshDim::context); ++m.context) {
          out.push_back(rank_of(m));
        }
      }
      break;
  }
  std::sort(out.begin(), out.end());
}

}  // namespace dtsim::parallel
