// Mixed GPU generations in one job (scenario key cluster.mixed_gpus; docs/networks.md "Mixed GPU
// generations"): runs of nodes whose GPUs are of another profile than the node
// profile's, e.g. DGX A100 servers whose GPUs are swapped for H100 in half of a job. Each rank's kernels
// are costed by the compute model of its own GPU (and its speed factor, config/speed_factors.hpp); the
// node profile still gives every node's links (NVLink, PCIe, NICs: state slower NICs with speed
// factors), host and the software's overlap and host-issue costs. A plan fits when it fits the GPU with
// the least memory. Only a simulation of every rank can tell one GPU from another, so the loader refuses
// mixed GPUs in symmetric mode and for layer-table workloads.
#pragma once

#include <cstdint>
#include <set>
#include <utility>
#include <vector>

#include "config/hardware.hpp"
#include "config/speed_factors.hpp"

namespace dtsim::config {

struct MixedGpus {
  std::int64_t first_node = 0;
  std::int64_t nodes = 1;  // nodes first_node .. first_node + nodes - 1
  GpuProfile gpu;
};

// The GPUs a job may mix: distinct GPU profiles besides the node profile's.
inline constexpr std::size_t kMaxMixedGpuEntries = 16;

// For each of `ranks` ranks, `gpus_per_node` to a node: the index in `entries` of the entry that covers
// its node, or -1 for the node profile's GPU. Empty when there are no entries.
std::vector<int> rank_gpu_entries(const std::vector<MixedGpus>& entries, std::int64_t ranks,
                                  std::int64_t gpus_per_node);
// The distinct (entry, compute speed) pairs of those ranks: rank_gpu_entries' index (-1: the node
// profile's GPU) and the product of the compute factors of rank_compute_speeds (speed_factors.hpp) that
// cover it. Counted over the runs of ranks between the entries' and factors' boundaries, in time and
// memory independent of `ranks` (a mistyped node count of billions is refused later, not allocated).
std::set<std::pair<int, double>> distinct_rank_kinds(const std::vector<MixedGpus>& entries,
                                                     const std::vector<SpeedFactor>& factors,
                                                     std::int64_t ranks, std::int64_t gpus_per_node);

}  // namespace dtsim::config
