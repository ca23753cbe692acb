// Loading a plan file (Plan v1, plan.hpp): strict like scenarios. Every problem is an InputError naming
// the file, the JSON pointer, the value and what was expected: unknown keys, neither or both of
// "tokens" and "steps", neither "deadline_days" nor "budget_usd", an unknown node or fabric profile,
// a non-positive price, an empty or unordered node list, and any error of the model, training,
// parallelism or simulation keys that a scenario with them would have.
#pragma once

#include <string>

#include "config/plan.hpp"
#include "config/scenario_loader.hpp"

namespace dtsim::config {

Plan load_plan_text(const std::string& text, const std::string& source_name, const DataPaths& data);

}  // namespace dtsim::config
