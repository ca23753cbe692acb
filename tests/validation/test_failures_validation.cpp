// Validation of the failures outcome model (models/failures) against published figures
// (failures_published.json beside this file, with citations):
//   - Daly 2006's optimum checkpoint intervals, found by simulation in the paper, against the higher-order
//     estimate dtsim uses when a scenario gives no interval. Bound: 5%.
//   - Kokolis et al. 2025's effective training time ratio of a 16,384-GPU job at the RSC-1 failure rate,
//     against dtsim's whole-run simulation (2,000 runs). Bound: 5% (the paper's own model agrees with its
//     simulation to 5%).
//   - The mean time to failure Kokolis et al. measured on 1,024-GPU jobs, against the one a per-node rate
//     implies: a known miss (the paper's own observation: small and medium jobs fail more often than the
//     cluster rate says). Printed, bound 25%, allowed to fail.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "models/failures/checkpoint.hpp"
#include "models/failures/goodput.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

namespace {

using dtsim::testing::ValidationRow;

dtsim::models::GoodputEstimate rsc1_job(const nlohmann::json& k, double interval_s,
                                        dtsim::config::FailureSpec& spec) {
  spec.categories = {{"node", dtsim::config::FailureUnit::node, k["failures_per_1000_node_days"].get<double>(), {}}};
  spec.restart_s = k["restart_s"].get<double>();
  spec.checkpoint.interval_s = interval_s;
  spec.runs = 2000;
  dtsim::models::GoodputInput in;
  in.spec = &spec;
  in.failure_free_s = 30.0 * 86400.0;  // a month of training; the ratio does not depend on it
  in.iteration_s = 1.0;
  in.gpus = k["gpus"].get<std::int64_t>();
  in.nodes = k["nodes"].get<std::int64_t>();
  in.checkpoint.write_s = 1e-3;  // negligible, as the published figure assumes
  in.checkpoint.read_s = 0.0;
  in.checkpoint.stall_s = 1e-3;
  return dtsim::models::estimate_goodput(in);
}

}  // namespace

TEST_CASE("validation: optimum checkpoint interval (Daly 2006)") {
  const nlohmann::json d = dtsim::testing::validation_data("failures_published.json")["daly2006"];
  std::vector<ValidationRow> rows;
  for (const auto& c : d["cases"]) {
    const double mtbf = c["mtbf_s"].get<double>();
    rows.push_back({"MTBF " + std::to_string(static_cast<int>(mtbf / 60)) + " min",
                    c["optimum_interval_s"].get<double>(),
                    dtsim::models::daly_optimal_interval_s(d["delta_s"].get<double>(), mtbf)});
  }
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group("Optimum checkpoint interval (Daly 2006)", rows, s);
  for (const auto& r : rows) CHECK(std::abs(r.predicted - r.measured) / r.measured <= 0.05);
}

TEST_CASE("validation: effective training time ratio of a 16k-GPU job (Kokolis et al. 2025)") {
  const nlohmann::json k = dtsim::testing::validation_data("failures_published.json")["kokolis2025"];
  std::vector<ValidationRow> rows;
  for (const auto& c : k["cases"]) {
    dtsim::config::FailureSpec spec;
    const double interval = c["interval_s"].get<double>();
    const auto g = rsc1_job(k, interval, spec);
    rows.push_back({"checkpoint every " + std::to_string(static_cast<int>(interval / 60)) + " min",
                    c["ettr"].get<double>(), g.goodput.p50});
  }
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group("Effective training time ratio, RSC-1 16k GPUs (Kokolis et al. 2025)", rows, s);
  for (const auto& r : rows) CHECK(std::abs(r.predicted - r.measured) / r.measured <= 0.05);
}

TEST_CASE("validation: mean time to failure of 1,024-GPU jobs (Kokolis et al. 2025)" * doctest::may_fail()) {
  const nlohmann::json k = dtsim::testing::validation_data("failures_published.json")["kokolis2025"];
  dtsim::config::FailureSpec spec;
  const auto g = rsc1_job(k, 3600.0, spec);
  // The same rate on 128 nodes: MTBF scales as 1 / nodes.
  const double mtbf_h = g.mtbf_s / 3600.0 * static_cast<double>(k["nodes"].get<std::int64_t>()) / 128.0;
  std::vector<ValidationRow> rows{{"1,024 GPUs (128 nodes)", k["mttf_1024_gpus_h"].get<double>(), mtbf_h}};
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group("Mean time to failure, 1,024-GPU jobs at the RSC-1 rate (hours)", rows, s);
  CHECK(std::abs(mtbf_h - rows[0].measured) / rows[0].measured <= 0.25);
}
