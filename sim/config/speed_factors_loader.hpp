// Reads cluster.speed_factors and checks it against the rest of the scenario (config/speed_factors.hpp
// has the meaning; docs/networks.md "Stragglers and degraded links").
#pragma once

#include <string>
#include <vector>

#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

// The entries of cluster.speed_factors (none when absent): each names a node (node < nodes, gpu <
// gpus_per_node) or a leaf switch (leaf < the leaves of `nodes_per_leaf` nodes each, with "uplink" only);
// factors in (0, kMaxSpeedFactor], "nic" and "nvlink" only in a node entry without "gpu". Throws
// InputError at the entry.
std::vector<SpeedFactor> read_speed_factors(ObjectReader& cluster, std::int64_t nodes,
                                            std::int64_t gpus_per_node, std::int64_t nodes_per_leaf);

// Throws InputError at /cluster/speed_factors of `file` when the scenario cannot honour its speed
// factors: a layer-table workload, symmetric mode, NIC or NVLink factors on the flow level, or more than
// kMaxComputeSpeeds distinct GPU speeds.
void check_speed_factors(const std::string& file, const Scenario& s);

}  // namespace dtsim::config
