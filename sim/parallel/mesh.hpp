// The rank mesh: how data, tensor, context and pipeline degrees map global ranks onto nodes, and the
// layout of each kind of communication group on the cluster.
//
// Ranks are numbered along the dimensions in `parallelism.order`, the first varying fastest. The
// default is Megatron-LM's (tensor, context, data, pipeline):
//   rank = tp + t * (cp + c * (dp + d * pp)).
// Consecutive ranks fill a node, so the first dimensions stay inside a node (tensor groups on NVLink
// when t <= GPUs per node). A group's layout (nodes spanned, members per node, groups of its kind
// sharing a node's NICs) is counted from its members' ranks.
#pragma once

#include <array>
#include <cstdint>
#include <initializer_list>

#include "config/scenario.hpp"
#include "graph/ops.hpp"

namespace dtsim::parallel {

// A rank's coordinates along the four dimensions.
struct Coord {
  std::int64_t stage = 0;
  std::int64_t tensor = 0;
  std::int64_t context = 0;
  std::int64_t data = 0;
};

class Mesh {
 public:
  static Mesh of(const config::Scenario& scenario);

  std::int64_t degree(config::MeshDim d) const { return degree_[static_cast<int>(d)]; }
  std::int64_t stride(config::MeshDim d) const { return stride_[static_cast<int>(d)]; }
  std::int64_t size() const;

  std::int64_t rank_of(const Coord& c) const;
  Coord coord_of(std::int64_t rank) const;

  // Layout of the group of rank 0 spanning the given dimensions (every group of a kind has the same).
  graph::CommGroup group(std::initializer_list<config::MeshDim> dims) const;
  graph::CommGroup tensor_group() const { return group({config::MeshDim::tensor}); }
  graph::CommGroup context_group() const { return group({config::MeshDim::context}); }
  // Gradients are reduced over data and context ranks together.
  graph::CommGroup gradient_group() const { return group({config::MeshDim::data, config::MeshDim::context}); }
  // Two ranks adjacent along one dimension (pipeline neighbours, context ring neighbours).
  graph::CommGroup neighbours(config::MeshDim d) const;

 private:
  graph::CommGroup layout(const std::int64_t* ranks, std::int64_t count) const;

  std::array<std::int64_t, config::kMeshDims> degree_{};
  std::array<std::int64_t, config::kMeshDims> stride_{};
  std::int64_t gpus_per_node_ = 1;
};

}  // namespace dtsim::parallel
