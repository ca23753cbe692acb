// Golden results: shipped scenarios evaluated and rendered as Result v1 JSON, compared field by field
// with the values recorded in tests/golden/cases/*.json. Numbers compare with the file's relative
// tolerance (rounding across compilers and libm), everything else exactly.
//
// After an intended model change, rewrite the recorded values and review the diff:
//   DTSIM_UPDATE_GOLDEN=1 build/tests/dtsim_tests -tc="golden*"
#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "reports/reports.hpp"
#include "results/evaluate.hpp"

namespace {

using nlohmann::json;

void compare(const json& expected, const json& actual, const std::string& pointer, double tolerance) {
  CAPTURE(pointer);
  if (expected.is_number() && actual.is_number()) {
    const double e = expected.get<double>();
    const double a = actual.get<double>();
    CHECK(std::abs(a - e) <= tolerance * std::max(std::abs(e), 1e-300));
    return;
  }
  CHECK(expected == actual);
}

}  // namespace

TEST_CASE("golden results of the shipped scenarios") {
  const std::filesystem::path dir = std::filesystem::path(DTSIM_TESTS_DIR) / "golden" / "cases";
  const bool update = std::getenv("DTSIM_UPDATE_GOLDEN") != nullptr;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  for (const auto& file : files) {
    CAPTURE(file.string());
    json golden = json::parse(std::ifstream(file));
    const std::string scenario_path = std::string(DTSIM_SOURCE_DIR) + "/" + golden["scenario"].get<std::string>();
    const auto scenario = dtsim::config::load_scenario(scenario_path, dtsim::config::default_data_paths());
    const json result = dtsim::reports::result_json(dtsim::results::evaluate(scenario, {}));
    const double tolerance = golden["relative_tolerance"].get<double>();
    for (auto& [pointer, expected] : golden["expect"].items()) {
      const json actual = result.at(json::json_pointer(pointer));
      if (update) {
        expected = actual;
      } else {
        compare(expected, actual, pointer, tolerance);
      }
    }
    if (update) std::ofstream(file) << golden.dump(2) << "\n";
  }
}
