// Loading a scenario: read JSON (a path, or "-" for stdin), validate it strictly against Scenario v1,
// resolve the model preset and the hardware profiles from the data directory, and check the fields
// against each other. Every problem is an InputError naming the file, the JSON pointer, the value found
// and what was expected. Plans that are valid but cannot run (indivisible model dimensions, memory) are
// not input errors: they are reported by the simulation as an infeasible result.
#pragma once

#include <cstdint>
#include <istream>
#include <optional>
#include <string>

#include "config/scenario.hpp"

namespace dtsim::config {

struct DataPaths {
  std::string hardware_profiles;  // folder with gpus/, nodes/, fabrics/
  std::string model_presets;      // folder with <preset>.json
  std::string schemas;            // folder with <name>.schema.json (dtsim schema)
};

// The data folders: $DTSIM_DATA_DIR if set, else the installed share folder, else the source tree.
DataPaths default_data_paths();

Scenario load_scenario(const std::string& path, const DataPaths& data);

// A cluster alone (node profile, node count, optional network overrides), for tools that cost
// communication without a workload: the Scenario's cluster and hardware are filled, nothing else.
// Errors name `source` (e.g. "command line") and the option's JSON pointer under /cluster.
struct ClusterRequest {
  std::string node;
  std::int64_t nodes = 1;
  std::optional<std::string> fabric;
  std::optional<double> nic_gbps;
  std::optional<int> nics_per_node;
  std::optional<double> oversubscription;
};
Scenario load_cluster(const ClusterRequest& request, const std::string& source, const DataPaths& data);
Scenario load_scenario_text(const std::string& text, const std::string& source_name, const DataPaths& data);

}  // namespace dtsim::config
