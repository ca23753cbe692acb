// ZeRO-3 / fully sharded data parallelism: how one layer's parameters are cut into collectives
// (config::Zero3Spec has the knobs; docs/parallelism.md, "ZeRO-3 implementations").
//
// A mixture-of-experts layer has two parts sharded over two groups, as FSDP2 with expert parallelism
// wraps them (torchtitan's `apply_fsdp`: the experts module is its own unit on the data-parallel mesh
// without the expert dimension; NeMo AutoModel likewise): the dense parameters (attention, norms,
// router, shared experts) over the data x context ranks, the rank's routed experts (layer_parameters_per_gpu
// in memory_model.hpp) over its expert_data ranks. Each part has its own collectives; the gathered
// parameters are both.
//
// The embedding and the output layer are units of their own, gathered whole before each use and
// reduce-scattered after their backward (the lowering's gather_unit, reduce_unit; the memory model counts
// the larger of them gathered).
//
// Each collective moves a group of the part's parameter tensors, counted per tensor-parallel rank:
//   granularity layer:  one group, the whole layer (FSDP's and Megatron-Core FSDP's unit);
//   granularity tensor: one group per tensor of at least persistence_threshold elements on the rank,
//                       in forward order; smaller tensors (norms, biases) join the next larger one, and
//                       trailing ones the last group. DeepSpeed's stage 3 before PR #1188 (June 2021)
//                       gathered each parameter on its own and kept those of fewer than
//                       stage3_param_persistence_threshold (default 1e5) elements resident; their few
//                       bytes travel here with a neighbour, so a layer moves the same bytes at either
//                       granularity.
// The parameters gathered at once on a rank (memory model): prefetch holds the layer in use and the
// next one; on_demand holds one group (its largest) at a time, a layer's parts at layer granularity, twice
// with list buffers (the flat buffer
// NCCL gathers into and the per-rank tensors it is copied to). The lowering issues an on-demand layer's
// gathers back to back before the layer; since nothing overlaps them, that takes the time DeepSpeed
// took fetching each tensor before its submodule, while the memory is DeepSpeed's.
#pragma once

#include <vector>

#include "config/scenario.hpp"

namespace dtsim::parallel {

// Dense parameters per tensor-parallel rank in each collective of one layer of the uniform model
// `layer_model` (a kind of the scenario's layers: models/transformer/layer_kinds.hpp) or of the model as
// written, in forward order.
std::vector<double> zero3_layer_groups(const config::Scenario& scenario,
                                       const config::TransformerSpec& layer_model);
std::vector<double> zero3_layer_groups(const config::Scenario& scenario);
// The rank's routed experts' parameters in each collective of one layer over its expert_data group: at
// layer granularity one, at tensor granularity the experts' up and down weights (Megatron-Core's
// GroupedMLP holds each as one tensor). Empty for a layer without routed experts, and where the
// expert_data group is one rank (the rank holds its experts whole).
std::vector<double> zero3_expert_groups(const config::Scenario& scenario,
                                        const config::TransformerSpec& layer_model);

// Parameters per tensor-parallel rank gathered at the same time on a rank, beyond its own shard, while
// layers of `layer_model` (or of the model as written) run, dense and routed experts' together (the
// experts only where they are gathered). On demand at layer granularity a layer holds both parts' (its
// gathers run back to back); per tensor, the largest collective's. The memory model takes the largest
// kind's.
double zero3_gathered_parameters(const config::Scenario& scenario,
                                 const config::TransformerSpec& layer_model);
double zero3_gathered_parameters(const config::Scenario& scenario);
// Parameters the output layer's use gathers (whole model): its own (models::head_parameters) and, with tied
// embeddings, the embedding table whose transpose its logits GEMM reads.
double zero3_head_use_parameters(const config::TransformerSpec& model);

}  // namespace dtsim::parallel
