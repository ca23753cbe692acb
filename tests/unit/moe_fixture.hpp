// Mixture-of-experts scenarios for unit tests: a model (a preset or inline) on DGX H100 nodes with the
// given parallelism, BF16, micro-batch 1 (and any other training keys given), loaded as a user's
// scenario file would be; and the op of a layer program by name.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "config/scenario_loader.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::testing {

inline config::Scenario h100_scenario(const nlohmann::json& model, const nlohmann::json& parallelism,
                                      std::int64_t nodes, std::int64_t global_batch,
                                      const nlohmann::json& training = nlohmann::json::object()) {
  nlohmann::json s = {
      {"schema_version", 1},
      {"name", "moe"},
      {"model", model},
      {"cluster", {{"node", "dgx-h100"}, {"nodes", nodes}}},
      {"parallelism", parallelism},
      {"training", {{"global_batch_size", global_batch}, {"micro_batch_size", 1}, {"precision", "bf16"}}}};
  s["training"].update(training);
  return config::load_scenario_text(s.dump(), "moe.json", config::default_data_paths());
}

// The first op named `name` in `ops`, or null.
inline const models::LayerOp* layer_op(const std::vector<models::LayerOp>& ops, const std::string& name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

}  // namespace dtsim::testing
