// Validation of the time-to-converge model (models/convergence) against published batch-size scaling
// points (convergence_batch_size.json beside this file, with citations): the steps a larger batch
// needed to reach the reference run's quality. The layer tables anchor S_min on each model's reference
// run (the first point of each model), so only the large-batch points are predictions.
// Bound: 20% error on the predicted steps. The gradient-noise-scale model with the published B_noise
// predicts about 1.8x (ResNet-50, Goyal et al.) and 2.8x (BERT, LAMB) the measured steps: those runs
// changed the optimizer and schedule (linear scaling + warm-up, LAMB), which the model does not
// represent. The test prints the error; its bound is a warning (the fidelity record binds).
#include <doctest/doctest.h>

#include <cmath>

#include <nlohmann/json.hpp>

#include "config/layer_table_loader.hpp"
#include "models/convergence/convergence.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

TEST_CASE("validation: steps to target vs batch size (Goyal 2017, LAMB 2020)") {
  const nlohmann::json data = dtsim::testing::validation_data("convergence_batch_size.json");
  const std::string tables = std::string(DTSIM_SOURCE_DIR) + "/models/layer_table/tables";
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const auto& p : data["points"]) {
    const auto table = dtsim::config::load_layer_table(tables, p["model"], {"test", "/model"});
    const double predicted = dtsim::models::steps_to_target(table.convergence, p["batch"].get<double>());
    rows.push_back({p["model"].get<std::string>() + " batch " + std::to_string(p["batch"].get<int>()) + " (" +
                        p["role"].get<std::string>().substr(0, 10) + ")",
                    p["steps"].get<double>(), predicted});
  }
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group("Steps to target vs batch size", rows, s);
  for (const auto& r : rows) WARN(std::abs(r.predicted - r.measured) / r.measured <= 0.20);
}
