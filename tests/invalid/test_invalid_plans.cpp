// One bad plan file per rule (tests/invalid/plan_cases/): `<name>.json` is the plan and `<name>.error`
// holds, on one line, the text the error message must contain. `dtsim plan` must exit with status 2,
// write nothing on standard output and name the file in its message.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "case_file.hpp"
#include "cli/cli.hpp"

namespace {

namespace fs = std::filesystem;
using dtsim::testing::first_line;

}  // namespace

TEST_CASE("invalid plans: dtsim plan exits 2 naming the file, the pointer and what was expected") {
  const fs::path dir = fs::path(DTSIM_TESTS_DIR) / "invalid" / "plan_cases";
  std::vector<fs::path> errors;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() == ".error") errors.push_back(entry.path());
  }
  std::sort(errors.begin(), errors.end());
  REQUIRE(errors.size() >= 8);
  for (const fs::path& error : errors) {
    const fs::path input = fs::path(error).replace_extension(".json");
    const std::string expected = first_line(error);
    CAPTURE(input.string());
    REQUIRE(fs::exists(input));
    std::istringstream in;
    std::ostringstream out, err;
    const int status = dtsim::cli::run_cli({"plan", input.string()}, in, out, err);
    CHECK(status == 2);
    CHECK(out.str().empty());
    CHECK(err.str().find(input.string()) != std::string::npos);
    CHECK_MESSAGE(err.str().find(expected) != std::string::npos, err.str());
  }
}
