// Loading layer tables (<layer_tables>/<id>.json) and the data-parallel keys of a scenario's
// "training" object.
//
// Table file: {"schema_version": 1, "id", "name", "source", "sample": "image" | "sequence",
//   "input_size", "convergence": {"b_noise", "s_min", "target", "source"},
//   "layers": [{"name", "kind": conv|fc|attention|pool|embedding|norm, "forward_flops",
//               "gemm": {"m", "n", "k", "batch"?} (conv, fc, attention), "tensors": [params...],
//               "activation_bytes", "input_bytes"? (pool), "epilogue"?, "sparse"?,
//               "lookups_per_sample"?, "row_params"? (sparse)}]}
// Every error names the file and the JSON pointer; an unknown id names the place it was written and
// lists the tables found.
#pragma once

#include <string>

#include "config/data_parallel.hpp"
#include "config/json_reader.hpp"
#include "config/layer_table.hpp"
#include "config/profile_loader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

LayerTable load_layer_table(const std::string& folder, const std::string& id, const IdLocation& where);

// Reads architecture, sync, staleness_bound, parameter_server, compute_variability, stragglers,
// simulated_steps, fusion_mb and staleness_penalty from `training` (every key optional);
// parameter_server.transport names a profile in <hardware_profiles>/ps_transports/ (default: none,
// "native" behaviour: the fabric's rates).
DataParallelSpec read_data_parallel(ObjectReader& training, const std::string& hardware_profiles);

// Cross-field rules of a scenario whose model is a layer table (InputError naming `file`): data
// parallelism only (tensor, pipeline, context 1, no ZeRO). What depends on the cluster's size (the
// batch over the GPUs, servers per node, stragglers per worker) makes a plan infeasible instead
// (parallel/feasibility.hpp, layer_table_infeasibility), so that sweeps over the cluster carry on.
void check_layer_table_scenario(const std::string& file, const Scenario& s);

const char* to_string(LayerKind k);
const char* to_string(Epilogue e);

}  // namespace dtsim::config
