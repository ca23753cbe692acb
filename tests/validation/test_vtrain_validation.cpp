// Validation against 746 measured Megatron-DeepSpeed iterations on A100 (vTrain's ground truth; rows,
// citation, license and the software of the runs in vtrain_a100.json beside this file): small GPT
// models (hidden 1024-3072) on 2 and 4 GPUs of one DGX A100 node, and on 8 nodes (64 GPUs). Two groups,
// one node and several nodes. Every run is stated as published: its degrees, batch sizes, FP16, full
// activation recompute (vTrain's configs: "use_checkpoint": true), the 1F1B schedule; the software
// stack is megatron-deepspeed-2023 for all (hardware_profiles/software/); no per-row knob.
//
// Known gap, reported on every run with its error; the bounds are warnings until the model meets them
// (the fidelity record's check binds):
// dtsim is 10% fast (median) on the one-node runs and 11% on the 64-GPU ones (up to 23% at tensor
// parallel 16 across two nodes, where the network sets the pace). On one node the error follows the
// work's size: hidden 1024 is 18% fast (micro-batch 1: 20-30%), hidden 2048 2% slow (tensor 1,
// micro-batch 2-8: 8-19% slow), which a missing per-kernel cost beside too slow A100 GEMMs at these
// sizes would give; telling which needs an A100. The host issues what
// the stack launches (its scripted kernels, per-tensor gradient additions and tensor-parallel
// collective calls: docs/parallelism.md "The host").
#include <doctest/doctest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

namespace {

using nlohmann::json;

json scenario_for(const json& row) {
  const json& m = row["model"];
  const bool one_node = row["setting"] == "single_node";
  json cluster = {{"node", "dgx-a100"}, {"nodes", row["nodes"]}};
  if (one_node) cluster["gpus"] = row["gpus"];
  // vTrain's configs: 800 Gb/s per node (4 x 200 Gb/s HDR) across nodes.
  if (!one_node) cluster["network"] = {{"fabric", "infiniband"}, {"nic_gbps", 200}, {"nics_per_node", 4}};
  return {{"schema_version", 1},
          {"name", row["id"]},
          {"software", "megatron-deepspeed-2023"},
          {"model",
           {{"kind", "transformer"},
            {"layers", m["layers"]},
            {"hidden_size", m["hidden"]},
            {"heads", m["heads"]},
            {"ffn_hidden_size", m["ffn_hidden"]},
            {"vocab_size", m["vocab"]},
            {"seq_length", m["seq_len"]}}},
          {"cluster", cluster},
          {"parallelism",
           {{"data", row["dp"]}, {"tensor", row["tp"]}, {"pipeline", row["pp"]}, {"schedule", "1f1b"}}},
          {"training",
           {{"global_batch_size", row["global_batch"]},
            {"micro_batch_size", row["micro_batch"]},
            {"precision", row["precision"]},
            {"activation_recompute", row["recompute"]}}}};
}

void check_setting(const std::string& setting, const std::string& title) {
  const json table = dtsim::testing::validation_data("vtrain_a100.json");
  const auto data = dtsim::config::default_data_paths();
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const auto& row : table["rows"]) {
    if (row["setting"] != setting) continue;
    const json s = scenario_for(row);
    const auto scenario = dtsim::config::load_scenario_text(s.dump(), row["id"].get<std::string>(), data);
    const auto result = dtsim::results::evaluate(scenario, {});
    REQUIRE_MESSAGE(result.iteration_time_s > 0.0, row["id"].get<std::string>() << ": " << result.reason);
    rows.push_back({fmt::format("{} tp{} pp{} dp{} mb{} h{}", row["id"].get<std::string>().substr(7),
                                row["tp"].get<int>(), row["pp"].get<int>(), row["dp"].get<int>(),
                                row["micro_batch"].get<int>(), row["model"]["hidden"].get<int>()),
                    row["measured_iter_time_s"].get<double>(), result.iteration_time_s});
  }
  REQUIRE(!rows.empty());
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group(title, rows, s);
  WARN(s.mape <= 10.0);
  WARN(std::abs(s.median_signed) <= 5.0);
  WARN(s.order_fraction() >= 0.85);
}

}  // namespace

TEST_CASE("validation: vTrain, Megatron-DeepSpeed on 2 and 4 A100 of one node (iteration s)") {
  check_setting("single_node", "vtrain-one-node (iteration_time_s)");
}

TEST_CASE("validation: vTrain, Megatron-DeepSpeed on 64 A100 (iteration s)") {
  check_setting("multi_node", "vtrain-several-nodes (iteration_time_s)");
}
