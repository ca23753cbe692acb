// Validation of the transformer compute model on one GPU against this project's PyTorch measurements on
// an H100 SXM (h100_gpt_step_pytorch.json and h100_fp8_step_pytorch.json beside this file, with their
// sources): the forward and backward GPU busy time of one micro-batch of the Megatron-LM 2024 H100
// table's 1.7B model and of one tensor-parallel rank's share of its 7.1B (tp 2) and 16B (tp 4) models,
// eager element-wise kernels, fused causal attention, no recompute; in BF16, and with the linear layers
// in FP8 under per-tensor current scaling with fused casts (the tensorwise recipe, linear.hpp). The
// prediction is the forward + backward compute of a one-node scenario of the same model and
// tensor-parallel degree (one micro-batch per data-parallel rank), whose collectives block rather than
// overlap, so that no compute is slowed by communication beside it.
// Bounds: MAPE <= 10% and >= 80% of the row pairs (measurements more than 5% apart) ordered. This
// checks that the H100 table's remaining errors are outside one GPU's compute (README "Accuracy today").
// The FP8 measurement's eager-cast rows (each cast step its own kernel: 1.7-1.8x the BF16 step) are
// not a recipe dtsim models (linear.hpp) and are not scored.
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

namespace gpt_compute_validation {

// The predicted forward + backward compute of one micro-batch of `row`'s model (a table row).
double predicted_busy_s(const nlohmann::json& row, const std::string& node, const std::string& precision) {
  const int tp = row["tp"];
  const int dp = 8 / tp;  // one DGX H100 node
  nlohmann::json training = {{"global_batch_size", dp * row["micro_batch"].get<int>()},
                             {"micro_batch_size", row["micro_batch"]},
                             {"precision", precision},
                             {"activation_recompute", "none"},
                             {"overlap_grad_reduce", false}};
  if (precision == "fp8") training["fp8_recipe"] = "tensorwise";
  const nlohmann::json s = {{"schema_version", 1},
                            {"name", fmt::format("GPT {} layers, hidden {}, tp {}, {}", row["layers"].get<int>(),
                                                 row["hidden"].get<int>(), tp, precision)},
                            {"model",
                             {{"kind", "transformer"},
                              {"layers", row["layers"]},
                              {"hidden_size", row["hidden"]},
                              {"heads", row["heads"]},
                              {"ffn_hidden_size", row["ffn"]},
                              {"seq_length", row["seq"]},
                              {"vocab_size", row["vocab"]},
                              {"mlp", "gelu"},
                              {"attention", "flash"},
                              {"elementwise_kernels", "eager"}}},
                            {"cluster", {{"node", node}, {"nodes", 1}}},
                            {"parallelism",
                             {{"data", dp},
                              {"tensor", tp},
                              {"sequence_parallel", false},
                              {"tp_backward_overlap", false},
                              {"tp_comm_overlap", false},
                              {"distributed_optimizer", true}}},
                            {"training", training}};
  const auto scenario =
      dtsim::config::load_scenario_text(s.dump(), s["name"].get<std::string>(), dtsim::config::default_data_paths());
  const auto result = dtsim::results::evaluate(scenario, {});
  REQUIRE(result.status == dtsim::results::Status::ok);
  return result.breakdown.forward_s + result.breakdown.backward_s;
}

std::string row_name(const nlohmann::json& row, const char* precision) {
  return fmt::format("GPT {} layers, hidden {}, tp {}, {}", row["layers"].get<int>(), row["hidden"].get<int>(),
                     row["tp"].get<int>(), precision);
}

}  // namespace gpt_compute_validation

TEST_CASE("validation: one H100's GPT compute against this project's PyTorch measurement (GPU busy s)") {
  using namespace gpt_compute_validation;
  const auto table = dtsim::testing::validation_data("h100_gpt_step_pytorch.json");
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const auto& row : table["rows"]) {
    rows.push_back({row_name(row, "bf16"), row["kernel_busy_s"].get<double>(),
                    predicted_busy_s(row, table["node"], "bf16")});
  }
  const auto score = dtsim::testing::score(rows);
  dtsim::testing::report_group("GPT forward + backward on one H100 SXM (GPU busy s per micro-batch)", rows,
                             score);
  CHECK(score.mape <= 10.0);
  CHECK(score.order_fraction() >= 0.8);
}

TEST_CASE("validation: one H100's GPT compute with FP8 linear layers, tensorwise scaling (GPU busy s)") {
  using namespace gpt_compute_validation;
  const auto table = dtsim::testing::validation_data("h100_fp8_step_pytorch.json");
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const auto& row : table["rows"]) {
    const auto& measured = row["variants"];
    const double bf16_s = predicted_busy_s(row, table["node"], "bf16");
    const double fp8_s = predicted_busy_s(row, table["node"], "fp8");
    rows.push_back({row_name(row, "fp8 tensorwise"), measured["fp8_fused"]["kernel_busy_s"].get<double>(), fp8_s});
    // The speed-up FP8 brings over BF16 on the same GPU, measured and predicted (printed, not scored).
    const double measured_speedup =
        measured["bf16"]["kernel_busy_s"].get<double>() / measured["fp8_fused"]["kernel_busy_s"].get<double>();
    MESSAGE(fmt::format("{}: FP8 speed-up over BF16 measured {:.3f}, predicted {:.3f}", row["model"].get<std::string>(),
                        measured_speedup, bf16_s / fp8_s));
  }
  const auto score = dtsim::testing::score(rows);
  dtsim::testing::report_group("GPT forward + backward with FP8 linears on one H100 SXM (GPU busy s per micro-batch)",
                               rows, score);
  CHECK(score.mape <= 10.0);
  CHECK(score.order_fraction() >= 0.8);
}
