// The rank mesh: how data, tensor, context and pipeline degrees map global ranks onto nodes, and the
// layout of each kind of communication group on the cluster.
//
// Placement follows Megatron-LM's default order (tensor fastest, then context, then data, then
// pipeline): rank = tp + t * (cp + c * (dp + d * pp)). Consecutive ranks fill a node, so tensor groups
// stay inside a node when t <= GPUs per node.
#pragma once

#include <cstdint>

#include "config/scenario.hpp"
#include "graph/ops.hpp"

namespace dtsim::parallel {

struct Mesh {
  std::int64_t tensor = 1;
  std::int64_t context = 1;
  std::int64_t data = 1;
  std::int64_t pipeline = 1;
  std::int64_t gpus_per_node = 1;

  static Mesh of(const config::Scenario& scenario);

  // Layout of a group of `size` ranks whose members are `stride` ranks apart.
  graph::CommGroup group(std::int64_t size, std::int64_t stride) const;
  graph::CommGroup tensor_group() const { return group(tensor, 1); }
  graph::CommGroup context_group() const { return group(context, tensor); }
  graph::CommGroup data_group() const { return group(data, tensor * context); }
  // Two neighbouring pipeline stages (one point-to-point transfer per rank of a stage).
  graph::CommGroup pipeline_pair() const { return group(2, tensor * context * data); }
};

}  // namespace dtsim::parallel
