// The shipped H100 GEMM curves (hardware_profiles/gpus/h100-sxm5-80gb.json) against this project's full
// cuBLASLt sweep on an H100 SXM (h100_cublaslt_sweep.json beside this file, with its source): 2,637 shapes
// in five precisions. Out of sample for BF16, FP16 and FP8 (their curves were fitted to the harness's
// --quick run and to published rows); in sample for TF32 and FP32, whose curves were fitted to this sweep's
// shapes of at least 10 GFLOP, which the profile carries. Per precision: predicted throughput = dense peak x
// gemm_efficiency (compute/gemm_efficiency.hpp) over the shapes of at least 10 GFLOP; bound MAPE <= 15%
// (the bound the in-sample check in test_compute_model.cpp uses) and >= 80% of the pairs (measurements
// more than 5% apart) ordered.
#include <doctest/doctest.h>

#include <map>
#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "compute/gemm_efficiency.hpp"
#include "config/profile_loader.hpp"
#include "config/scenario_loader.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

TEST_CASE("validation: H100 GEMM curves against the full cuBLASLt sweep (TFLOP/s)") {
  const auto table = dtsim::testing::validation_data("h100_cublaslt_sweep.json");
  const auto data = dtsim::config::default_data_paths();
  const auto gpu = dtsim::config::load_gpu_profile(data.hardware_profiles, "h100-sxm5-80gb", {"test", ""});
  std::map<std::string, std::vector<dtsim::testing::ValidationRow>> by_precision;
  for (const auto& row : table["rows"]) {
    const std::int64_t m = row[0], n = row[1], k = row[2];
    if (2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) < 10e9) continue;
    const std::string name = row[3];
    int p = 0;
    while (p < dtsim::config::kPrecisionCount &&
           name != dtsim::config::to_string(dtsim::config::Precision(p)))
      ++p;
    REQUIRE(p < dtsim::config::kPrecisionCount);
    const auto precision = dtsim::config::Precision(p);
    const double peak = *gpu.peak_tflops[static_cast<std::size_t>(p)];
    const double predicted = peak * dtsim::compute::gemm_efficiency(dtsim::graph::GemmShape{m, n, k, 1},
                                                                    gpu.gemm_curve(precision), gpu.sm_count);
    by_precision[name].push_back(
        {fmt::format("{} {}x{}x{}", name, m, n, k), row[4].get<double>(), predicted});
  }
  CHECK(by_precision.size() == 5);
  for (const auto& [name, rows] : by_precision) {
    const auto s = dtsim::testing::score(rows);
    std::printf(
        "H100 %s GEMMs, %zu shapes of >= 10 GFLOP: MAPE %.1f%% (constant guess %.1f%%), pairs ordered "
        "%d/%d\n",
        name.c_str(), rows.size(), s.mape, s.constant_mape, s.ordered, s.pairs);
    CHECK(s.mape <= 15.0);
    CHECK(s.order_fraction() >= 0.8);
  }
}
