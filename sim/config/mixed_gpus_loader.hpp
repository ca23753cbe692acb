// Reads cluster.mixed_gpus and checks it against the rest of the scenario (config/mixed_gpus.hpp has the
// meaning; docs/networks.md "Mixed GPU generations").
#pragma once

#include <string>
#include <vector>

#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

// The entries of cluster.mixed_gpus (none when absent): each {"first_node", "nodes" (default 1), "gpu"
// (a profile id in <hardware_profiles>/gpus/)}, inside the cluster's nodes and apart from one another;
// at most kMaxMixedGpuEntries. Throws InputError at the entry.
std::vector<MixedGpus> read_mixed_gpus(ObjectReader& cluster, std::int64_t nodes,
                                     const std::string& hardware_profiles);

// Throws InputError at /cluster/mixed_gpus of `file` when the scenario cannot honour them: a layer-table
// workload, symmetric mode, a measured one-GPU rate (it calibrates one kind of GPU), or more than
// kMaxComputeSpeeds distinct (GPU, speed) pairs.
void check_mixed_gpus(const std::string& file, const Scenario& s);

}  // namespace dtsim::config
