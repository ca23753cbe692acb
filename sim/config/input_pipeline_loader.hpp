// Reads the scenario's "input" block (config/input_pipeline.hpp has the meaning; docs/input-pipeline.md).
#pragma once

#include <optional>

#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

// The input pipeline, or std::nullopt when "input" is absent. Needs scenario.node (host cores) and the
// cluster read first. Throws InputError at the key: bytes and costs out of range, prefetch_factor without
// workers, tensor_bytes without reader servers (or reader servers without it), host_cpu_cores beside reader
// servers, preprocessing on trainer hosts whose node profile states no host_cpu_cores and the block none.
std::optional<InputPipelineSpec> read_input(ObjectReader& top, const Scenario& scenario);

}  // namespace dtsim::config
