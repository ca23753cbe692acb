// Plan v1, typed: a capacity-planning question (docs/search-and-plan.md "Capacity planning"). The model,
// training and optional parallelism/simulation keys are those of Scenario v1; each candidate cluster
// (a node type and fabric with its price per GPU-hour or per node-hour, at each of several node counts)
// becomes one resolved Scenario of that model on that cluster, with its global batch as the plan's
// batch rule sets it.
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
  bool keep_expert = false;
  bool keep_schedule = false;
  double min_headroom_gib = 0.0;
};

// How a price was stated: per GPU-hour or per hour of a whole node.
enum class PriceBasis { gpu_hour, node_hour };
inline const char* to_string(PriceBasis b) { return b == PriceBasis::gpu_hour ? "gpu_hour" : "node_hour"; }
// The command-line option that states a price on this basis, without its dashes.
inline const char* price_option(PriceBasis b) {
  return b == PriceBasis::gpu_hour ? "usd-per-gpu-hour" : "usd-per-node-hour";
}

// Where a candidate's price comes from, in order: the command line (--usd-per-gpu-hour or
// --usd-per-node-hour NODE=USD), the candidate's "usd_per_gpu_hour" or "usd_per_node_hour" with its
// "price_source", the node profile's "price" with its source.
struct PriceOverride {
  std::string node_id;
  PriceBasis basis = PriceBasis::gpu_hour;
  double usd = 0.0;
  std::string option;  // the option as given ("--usd-per-node-hour NODE=USD"), for the cluster's price source
};

struct PlanCluster {
  std::size_t candidate = 0;  // index into the plan file's "candidates"
  std::string node_id;
  std::string fabric;
  double usd_per_gpu_hour = 0.0;  // what costs use: a node-hour price over the node's GPUs
  PriceBasis price_basis = PriceBasis::gpu_hour;
  double stated_usd = 0.0;  // the price as stated, per GPU-hour or per node-hour
  std::string price_source;
  Scenario scenario;  // the plan's model and training on this cluster
};

// The global batch on each cluster (plan key "batch"): `fixed` runs every cluster at the stated
// global_batch_size; `per_gpu` holds the batch per GPU of the stated one at `reference_gpus` (weak
// scaling: global batch = stated x GPUs / reference_gpus, which must be a whole number), never above
// `max_global_batch_size` when given (past a critical batch size more samples no longer buy fewer
// steps: McCandlish et al. 2018, arXiv 1812.06162). A token target then takes fewer, larger steps on
// more GPUs; a step target trains on more tokens.
enum class BatchRule { fixed, per_gpu };
inline const char* to_string(BatchRule r) { return r == BatchRule::fixed ? "fixed" : "per_gpu"; }

struct PlanBatch {
  BatchRule rule = BatchRule::fixed;
  std::int64_t reference_gpus = 0;                     // per_gpu
  std::optional<std::int64_t> max_global_batch_size;  // per_gpu
};

struct Plan {
  std::string source;
  std::string name;
  std::optional<double> tokens;       // training tokens (not for a DLRM), or
  std::optional<double> samples;      // training samples, or
  std::optional<std::int64_t> steps;  // iterations
  std::optional<double> deadline_days;  // absent with budget_usd: every cluster that runs meets the plan
  std::optional<double> budget_usd;
  PlanSearchBounds search;
  PlanBatch batch;
  // Failures over the run (config/failures.hpp, without its length: the plan's tokens, samples or steps); each
  // cluster's time and cost are then those of its whole-run simulation.
  std::optional<FailureSpec> failures;
  std::vector<PlanCluster> clusters;  // candidates in file order, node counts ascending
};

}  // namespace dtsim::config
