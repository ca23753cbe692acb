// The pipeline for one scenario: workload x parallelism -> task graph -> engine -> metrics.
//
//   feasibility (divisibility of the model by the degrees) -> memory model -> lower() -> simulate()
//   -> derived metrics (throughput, MFU/HFU, breakdown)
//
// A plan that cannot run (indivisible dimensions, not enough memory) comes back as a Result with
// status infeasible and the reason; nothing here throws for a valid scenario.
#pragma once

#include <cstdint>
#include <vector>

#include "config/accuracy.hpp"
#include "config/scenario.hpp"
#include "parallel/reroute.hpp"
#include "results/result.hpp"

namespace dtsim::network {
class FlowCache;
}
namespace dtsim::parallel {
class LayoutsCache;
}

namespace dtsim::results {

struct EvaluateOptions {
  bool trace = false;  // record spans and fill Result::trace
  // Runs of kernels as one task each (parallel::LowerOptions): the same iteration and breakdown with
  // fewer tasks and events; a trace then shows the fused runs.
  bool fuse_kernels = false;
  // Flow-level collective times shared with other evaluations on the same cluster (search, sweep; not
  // owned, must outlive the call); null: each evaluation simulates its own (network/flow_cache.hpp).
  network::FlowCache* flow_cache = nullptr;
  // Each mesh's group layouts shared with other evaluations (search; not owned, must outlive the call;
  // parallel::LowerOptions::layouts_cache); null: each evaluation builds its own.
  parallel::LayoutsCache* layouts_cache = nullptr;
  // Every-rank mode: stage replicas that are down, whose ranks' work is re-routed to their data-parallel
  // peers (parallel::LowerOptions::down_replicas; results/reroute_pace.hpp checks the plan allows it).
  // Such a result has no calibration interval.
  std::vector<parallel::StageReplica> down_replicas = {};
};

// One scenario's result. A plan that cannot run (parallel::infeasibility, out of memory, too large
// to simulate, a time beyond the engine's clock: core::InfeasibleError) is a result with status
// infeasible and the reason, never an exception.
Result evaluate(const config::Scenario& scenario, const EvaluateOptions& options);

// Sets result.expected_error to the band of the closest validated regime (expected_error.hpp) when the
// result is feasible; every command that reports a prediction calls it once per result.
void state_expected_error(Result& result, const std::vector<config::ValidatedRegime>& regimes);

}  // namespace dtsim::results
