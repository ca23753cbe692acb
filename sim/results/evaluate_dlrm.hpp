// The pipeline for a DLRM scenario (config/dlrm.hpp, docs/dlrm.md): the dense part's memory, the
// embedding tables' shards placed under what HBM that leaves (parallel/embedding_shards.hpp), the task
// graph of every GPU (parallel/lower_dlrm.hpp), the engine with the scenario's network model, then
// the metrics: samples per second, model FLOPs (the dense part's; tokens per second 0), the breakdown,
// the memory of the GPU that needs the most, and the embeddings' summary (per-GPU lookups, HBM, host
// memory, cache hit rate).
//
// A plan that cannot run (a shard that fits no GPU, host memory exceeded, the dense part alone out of
// memory, no peak for the precision) is a result with status infeasible and the reason.
#pragma once

#include "config/scenario.hpp"
#include "results/evaluate.hpp"
#include "results/result.hpp"

namespace dtsim::results {

Result evaluate_dlrm(const config::Scenario& scenario, const EvaluateOptions& options);

}  // namespace dtsim::results
