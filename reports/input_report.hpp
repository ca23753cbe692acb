// Rendering of the input pipeline (config/input_pipeline.hpp, models/input/input_pipeline.hpp): the
// scenario echo's "input" block (Scenario v1 keys, readable back), the result's "input" block (JSON) and
// the terminal summary's input section. Computes nothing.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/input_pipeline.hpp"
#include "models/input/input_pipeline.hpp"

namespace dtsim::reports {

nlohmann::ordered_json input_spec_json(const config::InputPipelineSpec& in);
// The result's "input" block: the rate and its limits, and the sizing when there is one.
nlohmann::ordered_json input_rate_json(const models::InputRate& rate, const models::InputSizing* sizing);

// "storage GB/s 7.21 (stated 10), data-loader workers per GPU 6 (stated 5), ...": what a sizing needs
// (the input pipeline's, a DLRM's parameter servers').
std::string needs_text(const std::vector<models::ResourceNeed>& needs);

// The rate, what limits it, each resource's rate and the load of one batch beside `iteration_s`; then
// what each resource needs to keep up with the GPUs (`sizing`, when there is one).
void write_input_text(std::ostream& out, const models::InputRate& rate, const models::InputSizing* sizing,
                      double iteration_s);

}  // namespace dtsim::reports
