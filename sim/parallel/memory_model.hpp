// Memory per GPU of a plan, for its most loaded pipeline stage: every stage is estimated (the first
// holds the most micro-batches in flight, the last the logits, and a middle stage may hold a layer more
// than the ends when the layers do not split evenly: chunk_layers). Layers of different kinds (a mixture
// of experts' dense first layers: models/transformer/layer_kinds.hpp) count each as its kind: a stage's
// parameters and kept activations are summed over its layers; in flight, each layer-micro-batch holds
// the mean of the stage's layers (exact for 1F1B and GPipe, which hold whole stages); the working set is
// the largest of the stage's kinds.
//
// States, per parameter held by the rank (mixed precision, Rajbhandari et al. 2020, ZeRO, Sec. 3.1):
//   weights 2 B (fp32/tf32: 4), gradients 2 B for fp16 / 4 B otherwise (Megatron keeps FP32 main
//   gradients for bf16), optimizer 12 B (FP32 master, Adam m and v; fp32/tf32: 8 B). Data-parallel
//   sharding: distributed optimizer or ZeRO-1 shards the optimizer, ZeRO-2 also gradients, ZeRO-3 also
//   weights (plus the parameters gathered at once: zero3.hpp). A mixture-of-experts layer's routed
//   experts (models/transformer/moe.hpp) are held experts / expert per GPU, split over the expert
//   tensor ranks (the tensor degree, or 1 folded), and their states sharded over the ranks holding the
//   same ones (ParallelismSpec::expert_data_degree), under ZeRO-3 their weights too.
// Activations per layer and micro-batch (Korthikanti et al. 2022, arXiv 2205.05198, Sec. 4, for 16-bit
// activations and 1-byte dropout masks), generalized to GQA and any FFN:
//   replicated across tensor ranks (unless sequence parallel): 2 norm inputs 4sbh, QKV and MLP inputs
//     4sbh, two dropout masks 2sbh                                                     = 10 sbh
//   split over tensor ranks: Q 2sbw, K and V 4 s b kv d, attention output 2sbw (w = heads x d, the
//     query heads' width: h unless the model states a head_dim), MLP intermediates 4 s b f (GELU) or
//     6 s b f (SwiGLU)
//   attention scores (standard attention, no selective recompute): 5 a s^2 b, split over tensor ranks
//   full recompute keeps only the layer input, 2sbh (/t with sequence parallel).
//   selective recompute of the norms (training.recompute_modules 'layernorm') drops the QKV and MLP
//   inputs, their outputs (4sbh); of a mixture of experts' activation ('moe_act'), the activation's
//   output 2 c f_e (the down projection's input); of latent attention's up projections ('mla_up_proj'),
//   Q, K and V at the heads' widths.
//   eager elementwise kernels (models/transformer/elementwise.hpp) keep more: each RMSNorm its FP32
//   input copy and output (4 bytes per element more than the fused kernel's input), K and V repeated
//   to every query head, the attention output and its layout copy.
//   With f = 4h, kv = a, no GQA this is sbh(34 + 5as/h) (their eq. 1) and sbh(10 + 24/t + 5as/(ht))
//   with tensor parallelism (eq. 2).
//   A mixture-of-experts layer keeps, instead of the MLP intermediates, its busiest rank's token copies'
//   (c = s b top_k x busiest factor): 6 c f_e (SwiGLU; 4 GELU), the up GEMM's input of the received
//   copies, gathered over the e_t expert tensor ranks, 2 e_t c h, the down output's gradient path
//   2 c h, and its shared experts' 6 s b f_s, split over tensor ranks.
// In flight on stage s: pipeline_schedule.hpp, peak_in_flight_layers (1F1B min(m, p - s) micro-batches
// of its layers; interleaved its warm-up's chunks and one more, on the first stage L (1 + (p-1)/(p v))
// as Korthikanti et al. Sec. 4.2.3 give, and on the last still ((v - 1) p + 1) chunks; GPipe all m;
// ZB-H1: stage 0 as 1F1B; on stage s > 0 up to s + 1 micro-batches wait only for their W (right after
// a B: pipeline_schedule.hpp, zero_bubble_peak), each holding what W reads instead of the layers' kept
// activations: every weight-gradient GEMM's input and output gradient, an input W re-gathers as this
// rank's shard, on the last stage also the logits' (with full recompute, what B re-created; an input
// two GEMMs share counted twice: an upper bound)).
// Working set: while a layer's backward runs, the activations its recompute re-created are live too,
// one layer's worth: the set without recompute minus the kept set (full recompute: the whole layer's
// activations beyond its input; selective with standard attention: the 5 a s^2 b scores; nothing
// without recompute or for flash attention's selective recompute). Korthikanti et al.'s formulas
// count kept activations only; calculon-ai/calculon (Isaev et al. SC'23, calculon/llm/llm.py, memory
// capacity stats: "for full recompute we keep single block's activations") adds this working block.
// Buffers: gradient buckets (2 x bucket), the last stage's FP32 logits of one micro-batch, and a fixed
// 1 GiB for the CUDA context, NCCL and cuBLAS workspaces (engineering allowance).
#pragma once

#include <cstdint>
#include <vector>

#include "config/scenario.hpp"
#include "models/transformer/layer_kinds.hpp"

namespace dtsim::parallel {

struct MemoryEstimate {
  double weights_bytes = 0.0;
  double gradients_bytes = 0.0;
  double optimizer_bytes = 0.0;
  double activations_bytes = 0.0;
  double buffers_bytes = 0.0;
  double total_bytes() const {
    return weights_bytes + gradients_bytes + optimizer_bytes + activations_bytes + buffers_bytes;
  }
};

// Bytes of state per parameter held (the table above): weights, gradients and optimizer states by
// training precision. The lowering uses the same figures for the sizes of gradient and parameter
// collectives.
struct ParameterBytes {
  double weights = 2;
  double gradients = 4;
  double optimizer = 12;
};
ParameterBytes parameter_bytes(config::Precision precision);
// The same for a training setup: plain SGD keeps no moments, only the FP32 master copy under 16-bit
// training (optimizer 4 B, or 0 when the weights are FP32 already). Without master weights
// (TrainingSpec::master_weights false: torch.optim.AdamW on 16-bit parameters) a 16-bit run keeps
// 16-bit gradients and moments: 2 + 2 + 4 B per parameter with Adam, 2 + 2 with SGD.
ParameterBytes parameter_bytes(const config::TrainingSpec& training);

// One GPU's parameters: the dense ones split over the tensor group, a mixture of experts' routed
// experts (models/transformer/moe.hpp) over expert tensor x expert ranks. The dense ones are reduced and
// sharded over data x context ranks, the experts' over the expert_data ranks. The memory model and the
// lowering's gradient, optimizer and parameter-gather sizes count them from here.
struct GpuParameters {
  double dense = 0.0;
  double experts = 0.0;
  double total() const { return dense + experts; }
};
// Of one transformer layer of the uniform model `layer_model` (a kind of the scenario's layers:
// models/transformer/layer_kinds.hpp), or of the model as written.
GpuParameters layer_parameters_per_gpu(const config::Scenario& scenario,
                                       const config::TransformerSpec& layer_model);
GpuParameters layer_parameters_per_gpu(const config::Scenario& scenario);
// How many layers of each kind (models::LayerKinds) stage `stage` holds, from chunk_layers() `chunks` of
// `stages` stages.
std::vector<std::int64_t> stage_kind_layers(const models::LayerKinds& kinds,
                                            const std::vector<std::int64_t>& chunks, std::int64_t stages,
                                            std::int64_t stage);
// Of a pipeline stage: its layers, with the embedding on the first stage and the head on the last.
GpuParameters stage_parameters_per_gpu(const config::Scenario& scenario, std::int64_t stage);
// Of stage_parameters_per_gpu(), what is not in the stage's layers: the embedding on the first stage, the
// output layer on the last, and there the multi-token prediction modules with their embedding copy
// (models/transformer/mtp.hpp). Gradient buckets and parameter gathers add it to their first bucket.
GpuParameters stage_extra_parameters(const config::Scenario& scenario, std::int64_t stage);

// Activation bytes of one transformer layer (of `layer_model`, or of the model as written) for one
// micro-batch on one rank, as its recompute mode keeps them between forward and backward.
double layer_activation_bytes(const config::Scenario& scenario, const config::TransformerSpec& layer_model);
double layer_activation_bytes(const config::Scenario& scenario);

// Bytes a layer's backward holds beyond what it kept: the activations its recompute re-creates (the
// set without recompute minus the kept set; 0 without recompute).
double layer_working_set_bytes(const config::Scenario& scenario, const config::TransformerSpec& layer_model);
double layer_working_set_bytes(const config::Scenario& scenario);

// The most loaded rank's memory (the stage whose total is largest; the first at equal totals).
MemoryEstimate memory_per_gpu(const config::Scenario& scenario);

}  // namespace dtsim::parallel
