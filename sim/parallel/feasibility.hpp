// Whether a valid scenario can run at all: the parallel degrees must multiply to the cluster's GPUs,
// the model's dimensions must split evenly over the parallel
// degrees, the batch over the data-parallel replicas, the GPU must support the precision, and the
// iteration must be small enough to simulate. A plan that fails these is infeasible (a result with
// the reason), not bad input: sweeps carry on.
//
// Size limit: lowering visits every layer of every micro-batch's forward and backward pass on every
// simulated rank (one per pipeline stage, or every GPU with simulation.ranks "all"); more than
// kMaxSimulated of these layer passes is infeasible before anything is built, and so is a task graph
// that grows past kMaxSimulated tasks while it is built (lower.hpp). At about 54 bytes a task that is
// some 11 GB; the largest shipped simulation, every-rank Llama 3 405B on 16,384 GPUs, has 42.8 M tasks.
#pragma once

#include <optional>
#include <string>

#include "config/scenario.hpp"

namespace dtsim::parallel {

inline constexpr std::int64_t kMaxSimulated = 200'000'000;

// Micro-batches per data-parallel replica in one iteration: global / (data * micro) (0 when the
// product passes 64 bits).
std::int64_t micro_batches(const config::Scenario& scenario);

// Layer passes one iteration's lowering visits (see above): forward and backward of every layer, for
// every micro-batch, on every simulated rank of a stage. A double: it may pass 64 bits.
double layer_passes(const config::Scenario& scenario);

// Why the combined 1F1B schedule (config::ParallelismSpec::expert_comm_overlap, set or not in `scenario`)
// cannot run the plan, where Megatron-Core refuses it (megatron/training/arguments.py, validate_args, for
// --overlap-moe-expert-parallel-comm; megatron/core/transformer/transformer_config.py, __post_init__):
// without expert parallelism, with full recompute, with a pipeline but not the interleaved schedule, in
// a precision other than bf16 or fp16 (an fp8 run's model is bf16; autocast's is FP32), with more than one
// multi-token prediction module; and where dtsim does not model it: GPipe (nothing to pair) and ZeRO-3
// (parameters gathered per layer).
// infeasibility() asks it of plans that set the flag; a search asks it before it proposes one.
std::optional<std::string> combined_1f1b_infeasible(const config::Scenario& scenario);

// The first reason the plan cannot run, or nothing.
std::optional<std::string> infeasibility(const config::Scenario& scenario);

// The same for a workload that runs one data-parallel rank per GPU (layer tables, DLRM): its data degree,
// when stated, must be the cluster's GPUs and its global batch a multiple of them.
std::optional<std::string> per_gpu_data_parallel_infeasibility(const config::Scenario& scenario);

// And for a layer-table (CNN/BERT, parameter-server) scenario (config::LayerTable): the above, colocated
// parameter servers at most one per node and its stragglers at most its workers.
std::optional<std::string> layer_table_infeasibility(const config::Scenario& scenario);

}  // namespace dtsim::parallel
