// Validation of the compute model on convolutional networks against TensorFlow's published single-GPU
// benchmarks of 2017 (rows and citation in tf_benchmarks_p100_2017.json beside this file): images/s of
// Inception-v3, ResNet-50 (v1) and VGG-16 on one Tesla P100 SXM2 of a DGX-1, batch 64 and 32, fp32. The
// prediction is the one-GPU copy of a DGX-1 scenario (results/compute_calibration.hpp), which runs the
// model alone on one GPU, as those rows did. Bound: MAPE <= 10% and >= 80% of the row pairs (measurements
// more than 5% apart) ordered. Known gap, printed and marked may_fail: convolutions are costed as implicit
// GEMMs, while cuDNN ran VGG-16's 3x3 convolutions with faster algorithms (its published rate, 154 x 92.8
// GFLOP = 14.3 TFLOP/s, is above the GPU's 10.6 TFLOP/s peak); see README "Data-parallel classics".
#include <doctest/doctest.h>

#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "results/compute_calibration.hpp"
#include "results/evaluate.hpp"
#include "validation_score.hpp"

TEST_CASE("validation: one P100 on CNNs against TensorFlow's 2017 benchmarks (images/s)" *
          doctest::may_fail()) {
  std::ifstream in(std::string(DTSIM_TESTS_DIR) + "/validation/tf_benchmarks_p100_2017.json");
  const auto table = nlohmann::json::parse(in);
  const auto paths = dtsim::config::default_data_paths();
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const auto& row : table["rows"]) {
    const int batch = row["batch"];
    const nlohmann::json s = {{"schema_version", 1},
                              {"name", fmt::format("{} batch {}", row["model"].get<std::string>(), batch)},
                              {"model", {{"layer_table", row["model"]}}},
                              {"cluster", {{"node", table["node"]}, {"nodes", 1}}},
                              {"training",
                               {{"global_batch_size", 8 * batch},
                                {"precision", table["precision"]},
                                {"architecture", "allreduce"}}}};
    const auto scenario = dtsim::config::load_scenario_text(s.dump(), s["name"].get<std::string>(), paths);
    const auto result = dtsim::results::evaluate(dtsim::results::single_gpu_copy(scenario), {});
    REQUIRE(result.status == dtsim::results::Status::ok);
    rows.push_back(
        {s["name"].get<std::string>(), row["images_per_s"].get<double>(), result.throughput.samples_per_s});
  }
  const auto score = dtsim::testing::score(rows);
  dtsim::testing::print_rows("TensorFlow benchmarks 2017, one P100 SXM2 (images/s)", rows, score);
  CHECK(score.mape <= 10.0);
  CHECK(score.order_fraction() >= 0.8);
}
