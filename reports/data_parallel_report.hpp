// Rendering of the data-parallel blocks of a result (layer-table workloads): the scenario's layer
// table and training keys, the "data_parallel" and "convergence" result blocks (JSON), and their
// lines in the terminal summary. Computes nothing.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "results/result.hpp"

namespace dtsim::reports {

nlohmann::ordered_json layer_model_json(const config::LayerTable& table);
nlohmann::ordered_json data_parallel_training_json(const config::DataParallelSpec& d);
nlohmann::ordered_json data_parallel_json(const results::DataParallelStats& s);
// {"mean", "p50", "p99", "max"} (results/distribution.hpp).
nlohmann::ordered_json distribution_json(const results::Distribution& d);
nlohmann::ordered_json convergence_json(const results::ConvergenceResult& c);

void write_layer_model_text(std::ostream& out, const config::Scenario& s);
void write_data_parallel_text(std::ostream& out, const results::Result& r);

}  // namespace dtsim::reports
