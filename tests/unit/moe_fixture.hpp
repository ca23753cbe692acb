// Mixture-of-experts scenarios for unit tests: a model (a preset or inline) on DGX H100 nodes with the
// given parallelism, BF16, micro-batch 1 (and any other training keys given), loaded as a user's
// scenario file would be; the op of a layer program by name; a traced run's kernels by name.
#pragma once

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "config/scenario_loader.hpp"
#include "models/transformer/transformer.hpp"
#include "results/result.hpp"

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

// How many spans of each kernel rank 0 ran in a traced result (a label without its micro-batch: counted
// over all of them).
inline std::map<std::string, int> spans_by_kernel(const results::Result& r) {
  std::map<std::string, int> out;
  for (const auto& span : r.trace->spans) {
    if (r.trace->tracks[span.track].rank != 0) continue;
    std::string label = r.trace->labels[span.label];
    label = label.substr(0, label.find(' '));
    ++out[label];
  }
  return out;
}

// The first op named `name` in `ops`, or null.
inline const models::LayerOp* layer_op(const std::vector<models::LayerOp>& ops, const std::string& name) {
  const auto it = std::find_if(ops.begin(), ops.end(), [&](const auto& op) { return op.name == name; });
  return it == ops.end() ? nullptr : &*it;
}

}  // namespace dtsim::testing
