// Robustness over the shipped scenarios: a scenario file from scenarios/ (plans aside) with one or two
// of its values replaced by an extreme one (0, -1, 2^62, 1e308, 1e-300, a fraction, null, a boolean, a
// string, an empty array or object) or an ordinary size (1, 2, 3, 7, 1024, 2^31) must end `dtsim run`
// with exit status
//   0  it ran: a JSON result with status "ok";
//   2  bad input: nothing on standard output, an error on standard error;
//   3  infeasible: a JSON result with status "infeasible" and its reason;
// never a crash, an internal error (exit 1) or a hang. The mutations come from a fixed-seed
// std::mt19937, so the same cases run every time; a failing case prints the mutated scenario.
// The first runs of such mutations found: pipeline x virtual stages and data x micro-batch overflowing 64
// bits (a division by zero, internal checks), global batches of 2^31 (out of memory), 1e-300 Gb/s NICs (a
// duration past the 64-bit clock), 2^40 dedicated parameter servers (out of memory).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli.hpp"

namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::vector<fs::path> shipped_scenarios() {
  std::vector<fs::path> out;
  const fs::path root = fs::path(DTSIM_SOURCE_DIR) / "scenarios";
  for (const auto& entry : fs::recursive_directory_iterator(root)) {
    if (entry.path().extension() != ".json") continue;
    if (entry.path().parent_path().filename() == "plans") continue;  // plan files, not scenarios
    out.push_back(entry.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

json read_json(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return json::parse(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
}

// The values a mutation puts in place of a leaf: out of range, of the wrong type or extreme, and a few
// ordinary sizes that pass the reader and change the plan (2^31 as a batch or a count is extreme too).
constexpr std::size_t kExtreme = 11;  // the first 11 values below
std::vector<json> extreme_values() {
  return {0,    -1,   std::int64_t{1} << 62, 1e308,          1e-300, 0.5, nullptr,
          true, "x",  json::array(),         json::object(), 1,      2,   3,
          7,    1024, std::int64_t{1} << 31};
}

}  // namespace

TEST_CASE("mutated shipped scenarios: exit 0, 2 or 3 with the matching output, never a crash") {
  const std::vector<fs::path> files = shipped_scenarios();
  REQUIRE(files.size() >= 10);
  const std::vector<json> values = extreme_values();
  std::mt19937 rng(20261125);  // fixed: the same cases every run
  const auto pick = [&rng](std::size_t n) { return static_cast<std::size_t>(rng() % n); };
  constexpr int kCases = 1500;
  int ran = 0, bad_input = 0, infeasible = 0;
  for (int i = 0; i < kCases; ++i) {
    const fs::path& file = files[pick(files.size())];
    json scenario = read_json(file);
    const json leaves = scenario.flatten();  // JSON pointer -> leaf value
    const int mutations = 1 + static_cast<int>(pick(2));
    for (int k = 0; k < mutations; ++k) {
      auto leaf = leaves.begin();
      std::advance(leaf, static_cast<std::ptrdiff_t>(pick(leaves.size())));
      // A number gets any value; other leaves (names, ids, choices) mostly reject numbers, so they
      // get the extreme ones only (the first kExtreme).
      const std::size_t choices = leaf->is_number() ? values.size() : kExtreme;
      scenario[json::json_pointer(leaf.key())] = values[pick(choices)];
    }
    std::istringstream in(scenario.dump());
    std::ostringstream out, err;
    const int status = dtsim::cli::run_cli({"run", "-", "--format", "json", "--no-timing"}, in, out, err);
    INFO("case ", i, " from ", file.filename().string(), ": ", scenario.dump());
    INFO("exit ", status, ", stderr: ", err.str());
    if (status == 2) {
      ++bad_input;
      CHECK(out.str().empty());
      CHECK(err.str().rfind("error: ", 0) == 0);
      continue;
    }
    REQUIRE((status == 0 || status == 3));
    const json result = json::parse(out.str());
    CHECK(result["status"] == (status == 0 ? "ok" : "infeasible"));
    if (status == 3) {
      ++infeasible;
      CHECK(result["reason"].get<std::string>().size() > 0);
    } else {
      ++ran;
    }
  }
  MESSAGE(ran, " ran, ", bad_input, " bad input, ", infeasible, " infeasible of ", kCases,
          " mutated scenarios");
  CHECK(ran + bad_input + infeasible == kCases);
}
