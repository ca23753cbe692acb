#include "config/speed_factors.hpp"

#include <algorithm>

#include "core/random.hpp"

namespace dtsim::config {

std::vector<double> rank_compute_speeds(const std::vector<SpeedFactor>& factors, std::int64_t ranks,
                                        std::int64_t gpus_per_node) {
  std::vector<double> out;
  for (const SpeedFactor& f : factors) {
    if (f.compute == 1.0) continue;
    if (out.empty()) out.assign(static_cast<std::size_t>(ranks), 1.0);
    const std::int64_t first = f.node * gpus_per_node + f.gpu.value_or(0);
    const std::int64_t end = f.gpu ? first + 1 : first + gpus_per_node;
    for (std::int64_t r = first; r < end && r < ranks; ++r) out[static_cast<std::size_t>(r)] *= f.compute;
  }
  return out;
}

namespace {

// Per node, the product of the entries' `field` factors; empty when all are 1.
std::vector<double> node_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes,
                                double SpeedFactor::*field) {
  std::vector<double> out;
  for (const SpeedFactor& f : factors) {
    if (f.*field == 1.0 || f.node >= nodes) continue;
    if (out.empty()) out.assign(static_cast<std::size_t>(nodes), 1.0);
    out[static_cast<std::size_t>(f.node)] *= f.*field;
  }
  return out;
}

}  // namespace

std::vector<double> node_nic_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes) {
  return node_speeds(factors, nodes, &SpeedFactor::nic);
}

std::vector<double> node_nvlink_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes) {
  return node_speeds(factors, nodes, &SpeedFactor::nvlink);
}

std::vector<double> node_uplink_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes,
                                       std::int64_t nodes_per_leaf) {
  std::vector<double> out;
  const LeafBlocks leaves = leaf_blocks(nodes, nodes_per_leaf);
  for (const SpeedFactor& f : factors) {
    if (!f.leaf || f.uplink == 1.0) continue;
    if (out.empty()) out.assign(static_cast<std::size_t>(nodes), 1.0);
    for (std::int64_t n = 0; n < nodes; ++n) {
      if (leaves.block_of(n) == *f.leaf) out[static_cast<std::size_t>(n)] *= f.uplink;
    }
  }
  return out;
}

NodeLinkSpeeds node_link_speeds(const std::vector<SpeedFactor>& factors, std::int64_t nodes,
                                std::int64_t nodes_per_leaf) {
  return {node_nic_speeds(factors, nodes), node_nvlink_speeds(factors, nodes),
          node_uplink_speeds(factors, nodes, nodes_per_leaf), leaf_blocks(nodes, nodes_per_leaf)};
}

bool has_jitter(const std::vector<SpeedFactor>& factors) {
  return std::any_of(factors.begin(), factors.end(), [](const SpeedFactor& f) { return f.jitter_cv > 0.0; });
}

std::vector<SpeedFactor> jittered(const std::vector<SpeedFactor>& factors, std::uint64_t seed,
                                  std::int64_t iteration) {
  std::vector<SpeedFactor> out = factors;
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (out[i].jitter_cv <= 0.0) continue;
    out[i].compute /= core::lognormal_factor(seed, static_cast<std::int64_t>(i), iteration, out[i].jitter_cv);
    out[i].jitter_cv = 0.0;
  }
  return out;
}

}  // namespace dtsim::config
