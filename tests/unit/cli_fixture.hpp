// Helpers of the tests that drive the command line in-process (cli::run_cli) and read the files it
// writes: one home for what each such test file had its own copy of.
#pragma once

#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace dtsim::testing {

struct CliOutcome {
  int status = -1;
  std::string out;
  std::string err;
};

// dtsim with `args` (no program name), `input` on its standard input.
inline CliOutcome run_dtsim(const std::vector<std::string>& args, const std::string& input = "") {
  std::istringstream in(input);
  std::ostringstream out;
  std::ostringstream err;
  CliOutcome o;
  o.status = cli::run_cli(args, in, out, err);
  o.out = out.str();
  o.err = err.str();
  return o;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

// A fresh, empty folder "dtsim_test_<name>" in the temporary folder; names are unique across the test
// files (their cases run in parallel).
inline std::filesystem::path scratch_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("dtsim_test_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

// How often `what` occurs in `text` (overlapping occurrences too).
inline std::size_t occurrences(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t pos = text.find(what); pos != std::string::npos; pos = text.find(what, pos + 1)) ++n;
  return n;
}

inline const std::string kDefaultScenario = std::string(DTSIM_SOURCE_DIR) + "/scenarios/default.json";

}  // namespace dtsim::testing
