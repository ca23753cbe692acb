// One bad input per rule (tests/invalid/cases/): each `<name>.error` holds, on one line, the text the
// error message must contain; the input is `<name>.json`, or, when `<name>.missing` exists, the path
// written in it (relative to the cases folder) of a file that does not exist. Every case must be
// rejected by the scenario loader with an InputError, and by `dtsim run` with exit status 2, nothing
// on standard output and a message naming the file and containing the expected text.
//
// Profiles and presets come from default_data_paths(): $DTSIM_DATA_DIR when set, else the tree.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "case_file.hpp"
#include "cli/cli.hpp"
#include "config/scenario_loader.hpp"
#include "core/errors.hpp"

namespace {

namespace fs = std::filesystem;
using dtsim::testing::first_line;

struct InvalidCase {
  std::string name;
  std::string path;      // the scenario file given to dtsim
  std::string expected;  // text the error message must contain
};

fs::path cases_dir() { return fs::path(DTSIM_TESTS_DIR) / "invalid" / "cases"; }

// All cases, sorted by name.
std::vector<InvalidCase> load_cases() {
  std::vector<InvalidCase> cases;
  for (const fs::directory_entry& entry : fs::directory_iterator(cases_dir())) {
    if (entry.path().extension() != ".error") continue;
    const std::string name = entry.path().stem().string();
    const fs::path missing_marker = cases_dir() / (name + ".missing");
    const fs::path input = fs::exists(missing_marker) ? cases_dir() / first_line(missing_marker)
                                                      : cases_dir() / (name + ".json");
    cases.push_back({name, input.string(), first_line(entry.path())});
  }
  std::sort(cases.begin(), cases.end(),
            [](const InvalidCase& a, const InvalidCase& b) { return a.name < b.name; });
  return cases;
}

}  // namespace

TEST_CASE("invalid inputs: every case has an input and an expected message") {
  const std::vector<InvalidCase> cases = load_cases();
  CHECK(cases.size() >= 30);
  for (const InvalidCase& c : cases) {
    INFO("case: ", c.name);
    CHECK_FALSE(c.expected.empty());
    const bool marked_missing = fs::exists(cases_dir() / (c.name + ".missing"));
    CHECK(fs::exists(c.path) != marked_missing);
  }
  // No input without an expectation.
  for (const fs::directory_entry& entry : fs::directory_iterator(cases_dir())) {
    if (entry.path().extension() != ".json") continue;
    INFO("input: ", entry.path().string());
    CHECK(fs::exists(cases_dir() / (entry.path().stem().string() + ".error")));
  }
}

TEST_CASE("invalid inputs: the scenario loader throws an InputError naming the file") {
  const dtsim::config::DataPaths data = dtsim::config::default_data_paths();
  for (const InvalidCase& c : load_cases()) {
    INFO("case: ", c.name);
    std::string what;
    try {
      dtsim::config::load_scenario(c.path, data);
    } catch (const dtsim::core::InputError& e) {
      what = e.what();
      CHECK(e.file() == c.path);
    }
    INFO("message: ", what);
    CHECK_FALSE(what.empty());
    CHECK(what.find(c.expected) != std::string::npos);
  }
}

TEST_CASE("invalid inputs: dtsim run exits with status 2 and no output") {
  for (const InvalidCase& c : load_cases()) {
    INFO("case: ", c.name);
    std::istringstream in;
    std::ostringstream out;
    std::ostringstream err;
    const int status = dtsim::cli::run_cli({"run", c.path, "--format", "json"}, in, out, err);
    INFO("stderr: ", err.str());
    CHECK(status == dtsim::cli::kExitBadInput);
    CHECK(out.str().empty());
    CHECK(err.str().find(c.path) != std::string::npos);
    CHECK(err.str().find(c.expected) != std::string::npos);
  }
}
