// Loading a plan file (Plan v1, plan.hpp): strict like scenarios. Every problem is an InputError naming
// the file, the JSON pointer, the value and what was expected: unknown keys, neither or both of
// "tokens" and "steps", an unknown node or fabric profile, a non-positive price, both or neither of the
// two prices where the node profile states none, a price without its source, a batch rule whose
// global batch is not a whole number on some cluster, an empty or unordered node list, and any error of
// the model, training, parallelism or simulation keys that a scenario with them would have. Price
// overrides (plan.hpp, PriceOverride) win over the file's prices; one naming a node that no candidate
// uses is an InputError of the command line.
#pragma once

#include <span>
#include <string>

#include "config/plan.hpp"
#include "config/scenario_loader.hpp"

namespace dtsim::config {

Plan load_plan_text(const std::string& text, const std::string& source_name, const DataPaths& data,
                    std::span<const PriceOverride> prices = {});

// "NODE=USD" of --usd-per-gpu-hour or --usd-per-node-hour (price_option(basis)): InputError of the
// command line when it is not a node id, "=" and a positive number.
PriceOverride parse_price_override(const std::string& text, PriceBasis basis);

}  // namespace dtsim::config
