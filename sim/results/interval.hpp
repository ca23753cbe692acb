// Iteration-time interval from the calibration spread of a scenario's profiles.
//
// A calibrated GPU profile carries the 10th/90th-percentile throughput of its repeated GEMM and
// memory measurements relative to the median (config::ThroughputSpread), and a calibrated node the
// same for its intra-node collectives. The interval re-simulates the scenario twice with every
// calibrated throughput at one end (peak FLOP/s x compute_p90, HBM bandwidth x memory_p90, intra-node
// bandwidth x bandwidth_p90 for `low`; the p10 factors for `high`), so it propagates the measured
// run-to-run variation through the same engine; it says nothing about model error. Empty when
// neither profile has a spread or the scenario is infeasible.
#pragma once

#include <optional>

#include "config/scenario.hpp"
#include "results/result.hpp"

namespace dtsim::network {
class FlowCache;
}

namespace dtsim::results {

// `flow_cache`: flow-level collective times shared with the scenario's own evaluation (EvaluateOptions).
std::optional<Interval> calibration_interval(const config::Scenario& scenario,
                                             network::FlowCache* flow_cache);

}  // namespace dtsim::results
