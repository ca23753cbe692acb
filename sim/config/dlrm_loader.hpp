// Reading DLRM models and their embedding plans (config/dlrm.hpp; docs/dlrm.md has the keys):
//   "model": {"kind": "dlrm", "preset": id?, "dense_features", "bottom_mlp", "top_mlp", "interaction",
//             "dcn_layers", "dcn_low_rank", "embedding_precision", "tables"}
// a preset (models/dlrm/presets/<id>.json) gives every key and the scenario's keys replace its values
// ("tables" as a whole); without a preset every key but the DCN ones and embedding_precision is
// required. A table entry {"name", "rows", "dim", "pooling", "zipf_exponent", "count"} with count n > 1
// stands for n tables named name_0 .. name_{n-1} (synthetic table sets of any size).
//   "parallelism": {"embeddings": {"sharding", "per_table", "placement", "cache_fraction",
//                                  "column_shard_dim", "pipelined"}}
// Errors are InputError with the file, the JSON pointer, the value and what was expected.
#pragma once

#include <string>

#include "config/dlrm.hpp"
#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

// The most tables a model may have (after counts are expanded).
inline constexpr std::int64_t kMaxEmbeddingTables = 100000;

// "model" with "kind": "dlrm"; `presets` is the folder of DLRM presets.
DlrmSpec read_dlrm(ObjectReader& model, const std::string& presets);

// parallelism.embeddings (absent: the defaults); `model` names the tables per_table may name.
EmbeddingPlan read_embedding_plan(ObjectReader& parallelism, const DlrmSpec& model);

// What a DLRM scenario must hold beyond its keys: data parallelism only (tensor, pipeline, context 1,
// zero_stage 0, data = the GPU count), a global batch that divides over the GPUs, a host link in the
// GPU profile for host placements. Throws InputError.
void check_dlrm_scenario(const std::string& file, const Scenario& scenario);

}  // namespace dtsim::config
