// Reads the scenario's (or a plan's) "failures" block and the failure presets of
// hardware_profiles/failures (config/failures.hpp has the meaning; docs/failures.md "Failures and goodput").
#pragma once

#include <optional>
#include <string>

#include "config/failures.hpp"
#include "config/json_reader.hpp"
#include "config/scenario.hpp"

namespace dtsim::config {

// What the block may state besides the failures themselves: a plan gives the run's length itself.
struct FailureReadRules {
  bool run_length_allowed = true;
};

// The "failures" child of `parent` (nullopt when absent), with its preset resolved from
// `hardware_profiles`/failures. Throws InputError at the key that is wrong.
std::optional<FailureSpec> read_failures(ObjectReader& parent, const std::string& hardware_profiles,
                                         const FailureReadRules& rules);

// Why a layer-table workload or a DLRM takes no elastic recovery, in a scenario or in a plan (at
// /failures/recovery): no data-parallel replica of theirs holds the whole state.
inline constexpr const char* kElasticRefused =
    "elastic recovery drops data-parallel replicas of a transformer or MLP model; a layer-table or DLRM "
    "workload restarts (\"recovery\": \"restart\")";
// Likewise for re-routing: it moves micro-batches between the data-parallel replicas of a pipeline stage.
inline constexpr const char* kRerouteRefused =
    "re-routing moves micro-batches between data-parallel replicas of a transformer or MLP model's pipeline "
    "stages; a layer-table or DLRM workload restarts (\"recovery\": \"restart\")";

// Throws InputError at /failures of `file` when the scenario cannot honour its block: a DLRM
// elastic recovery or re-routing on a layer-table workload or a DLRM (kElasticRefused, kRerouteRefused), a
// length in tokens for a model without a sequence, or no length where the workload gives none (no convergence
// target).
void check_failures(const std::string& file, const Scenario& s);

}  // namespace dtsim::config
