#include "reports/output_envelope.hpp"

#include <string>

namespace dtsim::reports {

nlohmann::ordered_json output_envelope(std::string_view command, nlohmann::ordered_json inputs) {
  nlohmann::ordered_json j;
  j["schema_version"] = kOutputSchemaVersion;
  j["dtsim_version"] = DTSIM_VERSION;
  j["command"] = std::string(command);
  j["inputs"] = std::move(inputs);
  return j;
}

}  // namespace dtsim::reports
