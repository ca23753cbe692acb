// Reader of an inline multi-layer-perceptron model (scenario "model" with "kind": "mlp"; docs/scenario-and-result.md,
// Scenario v1): layers (hidden layers after the input layer), hidden_size, input_size, output_size,
// all positive integers; strict (no other key).
#pragma once

#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

TransformerSpec read_mlp(ObjectReader& model);

}  // namespace dtsim::config
