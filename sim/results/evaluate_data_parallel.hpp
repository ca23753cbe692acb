// The pipeline for a layer-table workload trained data-parallel (docs/data-parallel.md "Data-parallel classics"):
//
//   layer table x per-worker batch -> compute ops (models/layer_table) -> durations (compute model)
//   -> variables placed on all-reduce buckets and/or parameter servers -> event-driven simulation of
//   every worker and server (parallel/lower_data_parallel on the engine) -> throughput, staleness, wait -> time to converge
//   (models/convergence)
//
// Placement: allreduce all-reduces every gradient (a sparse embedding's too, densely); parameter_server
// places every variable on a server round-robin in table order, as TensorFlow's replica_device_setter
// does by default (so one large tensor makes one server hot), or, with parameter_server.partition_mb,
// each part of at most that size (BytePS-style partitioning, Jiang et al. OSDI'20); hybrid places the sparse
// variables on the servers and all-reduces the dense ones (Parallax, Kim et al. EuroSys'19). All-reduce
// buckets follow the backward pass in reverse layer order and close when they reach training.fusion_mb
// (Horovod tensor fusion); each costs the scenario's network level's all-reduce over all workers
// (simulation.network: analytic, or the flow level's simulation of it), as do the local reduce and
// broadcast of local aggregation. Transfers to and
// from servers also pass through parameter_server.transport (config::PsTransport): each server's sum of
// squared message sizes (one message per variable or part) feeds the large-message receive time.
#pragma once

#include "config/scenario.hpp"
#include "results/evaluate.hpp"
#include "results/result.hpp"

namespace dtsim::results {

// compute_scale multiplies every compute duration (compute::ComputeModel; 1 as profiled).
Result evaluate_data_parallel(const config::Scenario& scenario, const EvaluateOptions& options,
                              double compute_scale);

}  // namespace dtsim::results
