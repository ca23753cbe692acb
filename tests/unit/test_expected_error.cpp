// The expected error beside a prediction (results/expected_error.hpp): the closest validated regime of
// hardware_profiles/accuracy.json by GPU family, scale and software, its band as the iteration time's.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "config/accuracy.hpp"
#include "config/scenario_loader.hpp"
#include "results/expected_error.hpp"
#include "scenario_fixture.hpp"

using dtsim::config::RegimeMetric;
using dtsim::config::RegimeScale;
using dtsim::config::ValidatedRegime;

namespace {

ValidatedRegime regime(const std::string& group, const std::string& gpu, RegimeScale scale, const std::string& software,
                       RegimeMetric metric, std::int64_t n, double p10, double median, double p90) {
  ValidatedRegime r;
  r.group = group;
  r.gpu = gpu;
  r.scale = scale;
  r.software = software;
  r.metric = metric;
  r.source = "test";
  r.n = n;
  r.p10_signed_pct = p10;
  r.median_signed_pct = median;
  r.p90_signed_pct = p90;
  return r;
}

}  // namespace

TEST_CASE("expected error: the closest regime by GPU, scale and software, a rate's band as the time's") {
  const std::vector<ValidatedRegime> regimes{
      regime("a100 nodes, stack x", "a100", RegimeScale::multi_node, "x", RegimeMetric::time, 10, -20, -5, 10),
      regime("a100 nodes, larger", "a100", RegimeScale::multi_node, "y", RegimeMetric::time, 50, -30, -10, 5),
      regime("a100 one node", "a100", RegimeScale::one_node, "", RegimeMetric::time, 500, -15, -6, 11),
      regime("h100 nodes, a rate", "h100", RegimeScale::multi_node, "z", RegimeMetric::rate, 9, -20, 0, 25)};
  dtsim::config::Scenario s = dtsim::testing::fixture_scenario();  // 4 nodes of 8
  s.gpu.id = "a100-sxm4-80gb";
  s.software = "x";
  auto e = dtsim::results::expected_error(s, regimes);
  REQUIRE(e.validated);
  CHECK(e.group == "a100 nodes, stack x");  // GPU, scale and software
  CHECK(e.match == "GPU, scale and software");
  CHECK(e.low_pct == -20);
  CHECK(e.high_pct == 10);
  s.software = "";
  e = dtsim::results::expected_error(s, regimes);
  CHECK(e.group == "a100 nodes, larger");  // GPU and scale: the most rows
  CHECK(e.match == "GPU and scale");
  s.cluster.nodes = 1;
  CHECK(dtsim::results::expected_error(s, regimes).group == "a100 one node");
  // H100 on one node: only the several-node regime, a rate: a rate error e is a time error 1/(1+e) - 1:
  // p90 +25% -> -20%, p10 -20% -> +25%, median 0 -> 0.
  s.gpu.id = "h100-sxm5-80gb";
  e = dtsim::results::expected_error(s, regimes);
  CHECK(e.match == "GPU");
  CHECK(e.low_pct == doctest::Approx(-20.0));
  CHECK(e.high_pct == doctest::Approx(25.0));
  CHECK(e.median_pct == doctest::Approx(0.0));
  // No regime for the family: no band, and why.
  s.gpu.id = "v100-sxm2-32gb";
  e = dtsim::results::expected_error(s, regimes);
  CHECK_FALSE(e.validated);
  CHECK(e.reason == "no validated transformer runs on v100 GPUs");
}

TEST_CASE("the shipped regimes load, and each names a group of the validation record") {
  const auto regimes = dtsim::config::load_accuracy(dtsim::config::default_data_paths().hardware_profiles);
  REQUIRE_FALSE(regimes.empty());
  std::ifstream in(std::string(DTSIM_TESTS_DIR) + "/validation/fidelity_record.json");
  const auto record = nlohmann::json::parse(in)["groups"];
  for (const auto& r : regimes) {
    CAPTURE(r.group);
    REQUIRE(record.contains(r.group));
    // The figures are the record's (the validation tests rewrite both with DTSIM_UPDATE_FIDELITY=1).
    CHECK(r.n == record[r.group]["n"].get<std::int64_t>());
    CHECK(r.p10_signed_pct == record[r.group]["p10_signed_pct"].get<double>());
    CHECK(r.p90_signed_pct == record[r.group]["p90_signed_pct"].get<double>());
    CHECK(r.median_signed_pct == record[r.group]["median_signed_pct"].get<double>());
    CHECK(r.mape_pct == record[r.group]["mape_pct"].get<double>());
  }
}
