// The failures outcome model applied to an evaluated scenario (models/failures/goodput.hpp): the run's
// failure-free length from the scenario (failure-free days, iterations x the iteration time, tokens /
// tokens per second, or a layer-table workload's time to target), the checkpoint's size from the model
// (parameters x the bytes of weights and optimizer states per parameter, parallel/memory_model.hpp) and
// the largest rank's share from the memory model, the replicas each node holds from the rank mesh.
#pragma once

#include <cstdint>
#include <vector>

#include "config/failures.hpp"
#include "models/failures/goodput.hpp"
#include "results/result.hpp"

namespace dtsim::results {

// Sets result.goodput when the scenario states failures and the result is feasible.
void estimate_goodput(Result& result);

// For each node, the replicas with a rank on it: data-parallel replicas (their data coordinate), or with
// `per_stage` stage replicas (data coordinate x pipeline stages + stage: re-routing, reroute_pace.hpp).
std::vector<std::vector<std::int32_t>> node_replicas(const config::Scenario& s, bool per_stage);

// The estimate for a run of `failure_free_s` (a plan's length) under `spec`, on the result's plan.
models::GoodputEstimate goodput_of(const Result& result, const config::FailureSpec& spec, double failure_free_s);

// The failure-free length of the scenario's run (the block's length, or the time to target).
double failure_free_s(const Result& result, const config::FailureSpec& spec);

}  // namespace dtsim::results
