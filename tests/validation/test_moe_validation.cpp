// Validation against published mixture-of-experts training runs on DGX H100: Megatron-Core's (sources,
// settings and caveats in moe_megatron_h100.json beside this file) and NeMo AutoModel's
// (moe_automodel_h100.json): each row's scenario states what its publication states, with the software
// stack of its framework (megatron-core-2024, nemo-automodel-2025) and no per-row knob. A row published
// as model TFLOP/s per GPU is compared as the iteration time that rate gives for the model FLOPs of an
// iteration (models::model_flops_per_iteration: Megatron's formula, the one the figure used).
//
// Bound: MAPE <= 10%. A known gap, its bound a warning (README "Accuracy today"): both Megatron-Core runs are
// predicted too fast, by 17% (Mixtral 8x7B) and 32% (Qwen3-235B-A22B, 1 layer per pipeline chunk and
// 16 experts of 1,024 tokens per GPU); what the engine lacks there is not measured yet (grouped GEMMs at
// small per-expert token counts, the permutation and router kernels as they run, the host after each
// layer's token-count synchronization, the load balance of the runs).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "core/units.hpp"
#include "models/transformer/transformer.hpp"
#include "results/evaluate.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

namespace moe_validation {

// Each row of `file`'s table evaluated; its measured iteration time as published, or from its model
// TFLOP/s per GPU.
std::vector<dtsim::testing::ValidationRow> evaluate_rows(const std::string& file) {
  const nlohmann::json table = dtsim::testing::validation_data(file);
  const auto data = dtsim::config::default_data_paths();
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const auto& row : table["rows"]) {
    const nlohmann::json& s = row["scenario"];
    const auto scenario = dtsim::config::load_scenario_text(s.dump(), s["name"].get<std::string>(), data);
    const auto result = dtsim::results::evaluate(scenario, {});
    REQUIRE_MESSAGE(result.status == dtsim::results::Status::ok, result.reason);
    double measured = 0.0;
    if (row.contains("measured_iteration_s")) {
      measured = row["measured_iteration_s"].get<double>();
    } else {
      const double flops =
          dtsim::models::model_flops_per_iteration(scenario.model, scenario.training.global_batch_size);
      measured = flops / (row["measured_model_tflops_per_gpu"].get<double>() * dtsim::core::kTera *
                          static_cast<double>(scenario.gpu_count()));
    }
    rows.push_back({row["name"].get<std::string>(), measured, result.iteration_time_s});
  }
  return rows;
}

}  // namespace moe_validation

TEST_CASE("validation: Megatron-Core mixture of experts on H100 (iteration time)") {
  const auto rows = moe_validation::evaluate_rows("moe_megatron_h100.json");
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group("moe-megatron-h100 (iteration_time_s)", rows, s);
  WARN(s.mape <= 10.0);
}

// NeMo AutoModel's FSDP2 runs with expert parallelism and DeepEP (moe_automodel_h100.json has the
// sources and caveats: the fake balanced gate sends each token to one GPU or two, where dtsim's exchanges
// move k copies). Bound: MAPE <= 10%, a warning as above; the note of the change that added the group
// states the errors it measured.
TEST_CASE("validation: NeMo AutoModel mixture of experts on H100 (iteration time)") {
  const auto rows = moe_validation::evaluate_rows("moe_automodel_h100.json");
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group("moe-automodel-h100 (iteration_time_s)", rows, s);
  WARN(s.mape <= 10.0);
}
