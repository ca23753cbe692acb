// Reads a scenario's "cluster": the node, GPU and fabric profiles it names, the network's NICs and switch
// tiers (docs/networks.md "Topology"), the GPUs and links at another speed (config/speed_factors.hpp) and
// the nodes of another GPU (config/mixed_gpus.hpp).
#pragma once

#include <string>

#include "config/json_reader.hpp"
#include "config/scenario.hpp"
#include "config/scenario_loader.hpp"

namespace dtsim::config {

// Reads "cluster" of `top` into `scenario` (node, gpu, fabric and cluster), the profiles from `data`.
// Throws InputError at the offending key.
void read_cluster(ObjectReader& top, const DataPaths& data, Scenario& scenario);

// Once the rest of the scenario is read: throws InputError at /cluster/... of `file` when the scenario
// cannot honour its speed factors or mixed GPUs (speed_factors_loader.hpp, mixed_gpus_loader.hpp).
void check_cluster(const std::string& file, const Scenario& scenario);

}  // namespace dtsim::config
