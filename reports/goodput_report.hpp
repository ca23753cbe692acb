// Rendering of failures and goodput (models/failures/goodput.hpp): the scenario's "failures" block as
// read (JSON), the result's "goodput" block (JSON) and its lines in the terminal summary. Computes
// nothing.
#pragma once

#include <ostream>

#include <nlohmann/json.hpp>

#include "config/failures.hpp"
#include "models/failures/goodput.hpp"

namespace dtsim::reports {

nlohmann::ordered_json failures_json(const config::FailureSpec& f);
nlohmann::ordered_json goodput_json(const models::GoodputEstimate& g);

// The "failures", "checkpoint", "time to train" and "goodput" lines; `gpus` prices the GPU-hours.
void write_goodput_text(std::ostream& out, const config::FailureSpec& f, const models::GoodputEstimate& g,
                        std::int64_t gpus);

}  // namespace dtsim::reports
