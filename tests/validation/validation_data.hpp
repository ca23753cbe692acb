// The published (or this project's) measurements a validation test reads: a JSON file beside the tests
// in tests/validation/, with its source inside.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace dtsim::testing {

inline nlohmann::json validation_data(const std::string& name) {
  std::ifstream in(std::string(DTSIM_TESTS_DIR) + "/validation/" + name);
  return nlohmann::json::parse(in);
}

}  // namespace dtsim::testing
