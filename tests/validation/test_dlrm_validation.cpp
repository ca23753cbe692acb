// Validation of DLRM training (config/dlrm.hpp, docs/dlrm.md "Accuracy") against torchrec's published
// Criteo 1TB runs on one AWS p4d node (rows, sources, the software's facts and the plan stated here in
// torchrec_dlrm_p4d.json beside this file): samples per second of the DLRM example at 256 to 16,384
// samples per GPU, SGD and Adagrad, dot and DCN-v2 interactions, 4 and 8 A100s.
// Bound: MAPE <= 25% over the rows. The model misses it by far (printed): the published runs take 7 to
// 18 ms per iteration whatever the batch, where the modelled GPU work at 256 and 2,048 samples per GPU
// is 2 to 7 ms; the rest is the host's (torchrec's Python training pipeline, its KeyedJaggedTensor
// handling and the input pipeline), which dtsim counts only as one launch per modelled kernel. The
// bound is therefore a warning (may_fail); the fidelity record binds the group's MAPE.
#include <doctest/doctest.h>

#include <string>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/scenario_loader.hpp"
#include "results/evaluate.hpp"
#include "validation_data.hpp"
#include "validation_score.hpp"

// Named, not anonymous: unity builds put several files in one translation unit.
namespace dlrm_validation {

using nlohmann::json;

json scenario_for(const json& data, const json& run) {
  json tables = json::array();
  json per_table = json::object();
  const json& rows = data[fmt::format("row_counts_{}", run["rows"].get<std::string>())];
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const std::string name = fmt::format("cat_{}", i);
    tables.push_back({{"name", name}, {"rows", rows[i]}, {"dim", 128}, {"pooling", 1}});
    // The plan stated in the data file: tables of more than 10M rows row-wise.
    if (rows[i].get<std::int64_t>() > 10000000) per_table[name] = "row_wise";
  }
  json cluster = {{"node", "aws-p4d"}, {"nodes", 1}};
  if (run["gpus"] != 8) cluster["gpus"] = run["gpus"];
  return {{"schema_version", 1},
          {"name", run["id"]},
          {"model",
           {{"kind", "dlrm"},
            {"preset", "torchrec-dlrm-criteo-1tb"},
            {"interaction", run["interaction"]},
            {"tables", tables}}},
          {"cluster", cluster},
          {"parallelism", {{"embeddings", {{"sharding", "table_wise"}, {"per_table", per_table}}}}},
          {"training",
           {{"global_batch_size", run["global_batch"]},
            {"precision", run["precision"]},
            {"optimizer", run["optimizer"]}}}};
}

}  // namespace dlrm_validation

TEST_CASE("validation: torchrec DLRM on Criteo 1TB, 4 and 8 A100 40GB (p4d)" * doctest::may_fail()) {
  const nlohmann::json data = dtsim::testing::validation_data("torchrec_dlrm_p4d.json");
  std::vector<dtsim::testing::ValidationRow> rows;
  for (const nlohmann::json& run : data["runs"]) {
    const auto scenario =
        dtsim::config::load_scenario_text(dlrm_validation::scenario_for(data, run).dump(),
                                          run["id"].get<std::string>(), dtsim::config::default_data_paths());
    const auto r = dtsim::results::evaluate(scenario, {});
    REQUIRE_MESSAGE(r.status == dtsim::results::Status::ok, run["id"].get<std::string>() << ": " << r.reason);
    rows.push_back(
        {run["id"].get<std::string>(), run["samples_per_s"].get<double>(), r.throughput.samples_per_s});
  }
  const auto s = dtsim::testing::score(rows);
  dtsim::testing::report_group("torchrec DLRM, Criteo 1TB, p4d (samples/s)", rows, s);
  CHECK(s.mape <= 25.0);
}
