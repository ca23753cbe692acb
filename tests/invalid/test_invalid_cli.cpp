// Failing command lines, one per file in tests/invalid/cli_cases/: `<name>.args` holds the arguments of
// one dtsim call, one per line, `<name>.error` the text the error message must contain and, optionally,
// `<name>.status` the exit status when it is not 2 (bad input): 1 for an output that cannot be written.
// In the arguments, {src} stands for the source tree and {tmp} for an empty scratch folder of the case.
// Every case must exit with its status, print nothing on standard output, put the expected text on
// standard error and leave {tmp} empty (no partial output, no stray file).
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace {

namespace fs = std::filesystem;

fs::path cli_cases_dir() { return fs::path(DTSIM_TESTS_DIR) / "invalid" / "cli_cases"; }

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

std::vector<std::string> lines_of(const fs::path& file) {
  std::ifstream in(file, std::ios::binary);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : fs::directory_iterator(cli_cases_dir())) {
    if (entry.path().extension() == ".args") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE(
    "failing command lines: exit 2 (or .status), a message with the expected text, no output, no file") {
  const std::vector<std::string> names = case_names();
  CHECK(names.size() >= 8);
  for (const std::string& name : names) {
    INFO("case: ", name);
    const fs::path tmp = fs::temp_directory_path() / ("dtsim_invalid_cli_" + name);
    fs::remove_all(tmp);
    fs::create_directories(tmp);
    std::vector<std::string> args;
    for (const std::string& line : lines_of(cli_cases_dir() / (name + ".args"))) {
      args.push_back(replace_all(replace_all(line, "{src}", DTSIM_SOURCE_DIR), "{tmp}", tmp.string()));
    }
    const std::vector<std::string> expected = lines_of(cli_cases_dir() / (name + ".error"));
    REQUIRE(expected.size() == 1);
    const fs::path status_file = cli_cases_dir() / (name + ".status");
    const int expected_status =
        fs::exists(status_file) ? std::stoi(lines_of(status_file).at(0)) : dtsim::cli::kExitBadInput;
    std::istringstream in;
    std::ostringstream out;
    std::ostringstream err;
    const int status = dtsim::cli::run_cli(args, in, out, err);
    INFO("stderr: ", err.str());
    CHECK(status == expected_status);
    CHECK(out.str().empty());
    CHECK(err.str().find(expected.front()) != std::string::npos);
    CHECK(fs::is_empty(tmp));
    fs::remove_all(tmp);
  }
}
