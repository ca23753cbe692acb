// Plan v1, typed: a capacity-planning question (README "Capacity planning: dtsim plan"). The model,
// training and optional parallelism/simulation keys are those of Scenario v1; each candidate cluster
// (a node type and fabric with its price per GPU-hour, at each of several node counts) becomes one
// resolved Scenario of that model on that cluster.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/scenario.hpp"

namespace dtsim::config {

// Bounds on the strategy space searched for each cluster (plan key "search"); 0: no bound.
struct PlanSearchBounds {
  std::int64_t max_tensor = 0;
  std::int64_t max_pipeline = 0;
  std::int64_t max_context = 8;
  std::int64_t max_micro_batch = 8;
  std::int64_t max_virtual_stages = 8;
  bool keep_recompute = false;
  bool keep_sharding = false;
  bool keep_sequence_parallel = false;
  double min_headroom_gib = 0.0;
};

struct PlanCluster {
  std::size_t candidate = 0;  // index into the plan file's "candidates"
  std::string node_id;
  std::string fabric;
  double usd_per_gpu_hour = 0.0;
  std::string price_source;
  Scenario scenario;  // the plan's model and training on this cluster
};

struct Plan {
  std::string source;
  std::string name;
  std::optional<double> tokens;       // training tokens, or
  std::optional<std::int64_t> steps;  // iterations
  std::optional<double> deadline_days;  // absent with budget_usd: every cluster that runs meets the plan
  std::optional<double> budget_usd;
  PlanSearchBounds search;
  // Failures over the run (config/failures.hpp, without its length: the plan's tokens or steps); each
  // cluster's time and cost are then those of its whole-run simulation.
  std::optional<FailureSpec> failures;
  std::vector<PlanCluster> clusters;  // candidates in file order, node counts ascending
};

}  // namespace dtsim::config
