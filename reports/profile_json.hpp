// Hardware profiles as JSON in the hardware_profiles/ schema (hardware_profiles/README.md), for tools
// that write profiles (dtsim import nccl-tests, dtsim calibrate). `sources` must name a source for every
// value key.
#pragma once

#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "config/hardware.hpp"

namespace dtsim::reports {

using Sources = std::map<std::string, std::string>;

nlohmann::ordered_json gpu_profile_json(const config::GpuProfile& gpu, const Sources& sources);
nlohmann::ordered_json fabric_profile_json(const config::FabricProfile& fabric, const Sources& sources);
nlohmann::ordered_json node_profile_json(const config::NodeProfile& node, const Sources& sources);

}  // namespace dtsim::reports
