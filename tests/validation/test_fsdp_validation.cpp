// Validation of fully sharded data parallelism against torchtitan's published FSDP2 runs (rows,
// citation and the software of those runs in torchtitan_fsdp2_a100.json beside this file): tokens per
// second per GPU of Llama 2 13B and 70B and Llama 3 70B on 64 A100 80GB. Bound: MAPE <= 10% and >= 80%
// of the row pairs (measurements > 5% apart) ordered, one set of profile constants, no per-row knobs.
// Unstated knobs follow the data file's rules (the cluster's nodes and network).
//
// The data file names the runs' software stack, torchtitan-2024, which ran its norms, rotary
// embeddings and SwiGLU as eager PyTorch kernels (torch.compile off). Known gap, reported with its
// error; its bounds are warnings (the fidelity record binds): dtsim predicts 14-17% more tokens/s than torchtitan measured (README,
// "Accuracy today").
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

namespace {

using nlohmann::json;

json torchtitan_scenario(const json& table, const json& row) {
  const int gpus = row["gpus"];
  const int local_batch = row["local_batch"];
  return {{"schema_version", 1},
          {"name", fmt::format("torchtitan {} on {} A100", row["model"].get<std::string>(), gpus)},
          {"software", table["software"]},
          {"model", {{"preset", row["model"]}, {"seq_length", row["seq_length"]}}},
          {"cluster", {{"node", table["node"]}, {"nodes", gpus / 8}}},
          {"parallelism", {{"data", gpus}, {"zero_stage", table["zero_stage"]}}},
          {"training",
           {{"global_batch_size", gpus * local_batch},
            {"micro_batch_size", local_batch},
            {"precision", table["precision"]},
            {"activation_recompute", row["activation_recompute"]}}}};
}

}  // namespace

TEST_CASE("validation: torchtitan FSDP2 on 64 A100 (tokens/s per GPU)") {
  const json table = dtsim::testing::validation_data("torchtitan_fsdp2_a100.json");
  const auto paths = dtsim::config::default_data_paths();
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const auto& row : table["rows"]) {
    const json s = torchtitan_scenario(table, row);
    const auto scenario = dtsim::config::load_scenario_text(s.dump(), s["name"].get<std::string>(), paths);
    const auto result = dtsim::results::evaluate(scenario, {});
    REQUIRE(result.status == dtsim::results::Status::ok);
    const double per_gpu = result.throughput.tokens_per_s / row["gpus"].get<double>();
    rows.push_back(
        {fmt::format("{} b{} recompute {}", row["model"].get<std::string>(), row["local_batch"].get<int>(),
                     row["activation_recompute"].get<std::string>()),
         row["measured_tokens_per_s_per_gpu"].get<double>(), per_gpu});
  }
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group("torchtitan FSDP2, 64 A100 (tokens/s per GPU)", rows, s);
  WARN(s.mape <= 10.0);
  WARN(s.order_fraction() >= 0.8);
}
