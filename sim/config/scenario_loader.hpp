// Loading a scenario: read JSON (a path, or "-" for stdin), validate it strictly against Scenario v1,
// resolve the model preset and the hardware profiles from the data directory, and check the fields
// against each other. Every problem is an InputError naming the file, the JSON pointer, the value found
// and what was expected. Plans that are valid but cannot run (indivisible model dimensions, memory) are
// not input errors: they are reported by the simulation as an infeasible result.
#pragma once

#include <istream>
#include <string>

#include "config/scenario.hpp"

namespace dtsim::config {

struct DataPaths {
  std::string hardware_profiles;  // folder with gpus/, nodes/, fabrics/
  std::string model_presets;      // folder with <preset>.json
};

// The data folders: $DTSIM_DATA_DIR if set, else the installed share folder, else the source tree.
DataPaths default_data_paths();

Scenario load_scenario(const std::string& path, const DataPaths& data);
Scenario load_scenario_text(const std::string& text, const std::string& source_name, const DataPaths& data);

}  // namespace dtsim::config
