// Whether a valid scenario can run at all: the model's dimensions must split evenly over the parallel
// degrees, the batch over the data-parallel replicas, and the GPU must support the precision. A plan
// that fails these is infeasible (a result with the reason), not bad input: sweeps carry on.
#pragma once

#include <optional>
#include <string>

#include "config/scenario.hpp"

namespace dtsim::parallel {

// Micro-batches per data-parallel replica in one iteration: global / (data * micro).
std::int64_t micro_batches(const config::Scenario& scenario);

// The first reason the plan cannot run, or nothing.
std::optional<std::string> infeasibility(const config::Scenario& scenario);

}  // namespace dtsim::parallel
