// Decoder-only transformer as hardware-free cost declarations: per layer and per micro-batch, the
// operators one tensor-parallel rank runs (FLOPs, HBM bytes, GEMM shapes) and the communication the
// Megatron split implies, in execution order.
//
// Sources: Megatron-LM tensor parallelism (Shoeybi et al. 2019, Fig. 3: column-parallel QKV and MLP-up,
// row-parallel output projections, one all-reduce per block forward and one backward); sequence
// parallelism (Korthikanti et al. 2022, arXiv 2205.05198, Sec. 4.2.2: all-gather before and
// reduce-scatter after each block instead of the all-reduce; in the backward pass each column-parallel
// linear re-gathers its sharded input for the weight gradient: GemmOverlap::beside_next); FLOP counts
// per Narayanan et al. SC'21 (arXiv 2104.04473) Sec. 5.1 and Appendix: 24*b*s*h^2 + 4*b*s^2*h per
// layer forward, logits 2*b*s*h*V; backward = 2x forward. Attention FLOPs are counted over the full
// score matrix (Megatron convention); a causal fused kernel executes about half of them (Dao 2023,
// FlashAttention-2, Sec. 3.1.1). The loss is Megatron's unfused vocabulary-parallel cross-entropy
// (megatron/core/tensor_parallel/cross_entropy.py, the default without --cross-entropy-loss-fusion;
// megatron/mpu/cross_entropy.py in 2021): logits cast to FP32, then max, in-place shift, exp, sum and
// normalize, each a pass over the logits; backward scales the saved softmax in place and casts the
// gradient back. Eager stacks without tensor parallelism (torchtitan, Hugging Face transformers) call
// PyTorch's F.cross_entropy on the FP32-cast logits instead: the cast, log-softmax (read FP32, write
// FP32) and the loss, (a + 4) + 8 bytes per logit in 3 kernels forward; backward the gradient's fill,
// the loss's and the log-softmax's backward (read the output and the gradient, write the input's
// gradient) and the cast back, 4 + 12 + (4 + a) bytes in 4 kernels (kernels as torch.profiler lists
// them, calibration/torch/kernel_class_probe.py), each costed at its memory class's measured rate.
//
// A scenario whose model is an MLP (config::ModelKind::mlp) gets the programs, parameters and FLOPs of
// models/mlp/mlp.hpp from the same functions: its input layer stands for the embedding, its hidden
// layers for the blocks, its output layer and loss for the head.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "config/scenario.hpp"
#include "graph/ops.hpp"

namespace dtsim::models {

// How one rank's share of the work is cut.
struct ShardConfig {
  std::int64_t tensor = 1;
  bool sequence_parallel = false;
  std::int64_t context = 1;
  std::int64_t micro_batch = 1;
  config::Precision precision = config::Precision::bf16;
  bool backward_overlap = true;  // config::ParallelismSpec::tp_backward_overlap
  config::GradAccumulation grad_accumulation = config::GradAccumulation::none;
  bool autocast = false;  // config::TrainingSpec::autocast (autocast.hpp)
  config::Fp8Recipe fp8_recipe = config::Fp8Recipe::delayed;  // with precision fp8 (linear.hpp)
  std::int64_t expert = 1;  // expert-parallel degree (mixture-of-experts models: moe.hpp)
  // config::ParallelismSpec::expert_tensor: the expert tensor-parallel degree, 1 folded (moe.hpp);
  // absent: the tensor degree.
  std::optional<std::int64_t> expert_tensor = std::nullopt;
  bool master_weights = true;  // config::TrainingSpec::master_weights: false, 16-bit gradients

  std::int64_t expert_tensor_degree() const { return expert_tensor.value_or(tensor); }
};

// Communication a layer needs inside its tensor- or context-parallel group.
enum class CommRole : std::uint8_t {
  none,
  tensor_all_reduce,
  tensor_all_gather,
  tensor_reduce_scatter,
  context_exchange,
  expert_all_to_all,  // over the expert-parallel group (moe.hpp)
  expert_all_gather   // over the expert-parallel group (moe.hpp: the token counts)
};

// Whether a communication op can run beside a GEMM:
//   with_next, with_previous: pipelined chunk by chunk with the GEMM it feeds or drains (the all-gather
//     feeding the next GEMM, the reduce-scatter draining the previous one: Wang et al. 2022, "Overlap
//     Communication with Dependent Computation via Decomposition"; Transformer Engine userbuffers),
//     with parallelism.tp_comm_overlap only;
//   beside_next: whole, beside the next GEMM, which does not need it; the op after that GEMM waits for
//     both. A column-parallel linear's backward under sequence parallelism runs this way with or without
//     userbuffers: it re-gathers its input beside the data-gradient GEMM and reduce-scatters the data
//     gradient beside the weight-gradient GEMM (Megatron-LM tensor_parallel/layers.py,
//     LinearWithGradAccumulationAndAsyncCommunication.backward, both collectives async_op=True since
//     2022; Transformer Engine's ub_bulk_dgrad / ub_bulk_wgrad overlap the same pairs).
enum class GemmOverlap : std::uint8_t { none, with_next, with_previous, beside_next };

// Forward kernels that selective recompute may rerun besides the attention core (attention_core),
// by their Megatron-Core module (config::RecomputeModules): the layer's two norms, a mixture of experts'
// activation.
enum class RecomputeTag : std::uint8_t { none, layernorm, moe_act, mla_up_proj };

struct LayerOp {
  std::string_view name;
  graph::ComputeOp compute;  // when role == none
  CommRole role = CommRole::none;
  double comm_bytes = 0.0;  // when role != none (CommOp::bytes convention)
  GemmOverlap overlap = GemmOverlap::none;
  bool attention_core = false;  // recomputed by selective recompute
  RecomputeTag recompute_tag = RecomputeTag::none;
  // The host issues it only once the ops before it are done (it waits on a device-to-host read first:
  // moe.hpp's token counts); graph::TaskGraph::add_host_wait.
  bool host_waits = false;
  // Part of a parameter's gradient, which no earlier layer waits for: weight-gradient GEMMs, bias
  // gradients, weight-gradient casts and accumulation, an input re-gathered or transposed only for a
  // weight gradient, the embedding's backward. A schedule that splits the backward pass (zero bubble:
  // pipeline_schedule.hpp) runs these later, as the pass "W" of Qi et al. 2024 (arXiv 2401.10241, Sec.
  // 2); the norms' weight gradients are computed by their backward kernels and stay with them.
  bool weight_grad = false;
};

// `op` marked as part of a weight gradient (LayerOp::weight_grad).
LayerOp weight_grad_op(LayerOp op);

// Layer ops of the two compute kinds: a GEMM of [m x k] x [k x n] (`batch` of them) on elements of `a`
// bytes, 2mnk FLOPs and each operand read or written once; a memory-bound kernel moving `bytes`.
// Dimensions are rounded to whole numbers (a huge, infeasible plan's saturate at 2^63 - 1).
LayerOp gemm_op(std::string_view name, double m, double n, double k, double a, double batch = 1,
                bool attention_core = false);
LayerOp memory_op(std::string_view name, double bytes, bool attention_core = false,
                  core::MemoryClass memory = core::MemoryClass::streaming);

// A communication op of `bytes` (graph::CommOp::bytes convention for the role's collective).
LayerOp comm_op(std::string_view name, CommRole role, double bytes, GemmOverlap overlap = GemmOverlap::none);

struct LayerProgram {
  std::vector<LayerOp> forward;
  std::vector<LayerOp> backward;
};

double activation_bytes_per_element(config::Precision p);

// One transformer block (attention + MLP) for one micro-batch, of a model whose layers attend alike
// (uniform_attention(), layer_kinds.hpp: a kind's model). Fused attention with a sliding window computes
// the key tiles the window touches (transformer.cpp, executed_keys()); the standard (unfused) attention
// computes and masks the whole score matrix, as eager implementations do.
LayerProgram transformer_layer(const config::TransformerSpec& model, const ShardConfig& shard);
// Token embedding (first pipeline stage).
LayerProgram embedding_layer(const config::TransformerSpec& model, const ShardConfig& shard);
// Final norm, logits and cross-entropy loss (last pipeline stage).
LayerProgram head_layer(const config::TransformerSpec& model, const ShardConfig& shard);

// One multi-token prediction module's norms, concatenation and projection (mtp.hpp); the module's
// layer, embedding lookup and head are layer programs of the model.
LayerProgram mtp_projection_layer(const config::TransformerSpec& model, const ShardConfig& shard);

// Parameters (whole model, not sharded; with multi-token prediction modules, mtp.hpp, theirs too).
double parameters_per_layer(const config::TransformerSpec& model);
double embedding_parameters(const config::TransformerSpec& model);  // token embedding
double head_parameters(const config::TransformerSpec& model);       // final norm + output projection
double total_parameters(const config::TransformerSpec& model);
// The parameter tensors of one layer (element counts, whole model), in the order the forward pass
// uses them; parameters_per_layer() is their sum. Megatron-LM's modules: input norm, fused QKV
// weight and bias, output projection weight and bias, second norm, MLP up weight (gate and up fused
// for SwiGLU) and bias, MLP down weight and bias; biases only in GPT-style (GELU) layers. A
// mixture-of-experts layer has, after its second norm, the router's weight, all routed experts' up
// weights as one tensor and their down weights as another (Megatron-Core's GroupedMLP), then its shared
// experts' weights as a dense MLP's. QKV projects
// h to (heads + 2 kv_heads) x head_dim, the output projection heads x head_dim back to h. An MLP
// model's hidden layer is one weight and one bias.
std::vector<double> layer_parameter_tensors(const config::TransformerSpec& model);
// The same tensors but the routed experts' (which the expert ranks hold: moe.hpp) as one tensor-parallel
// rank of `tensor` holds them: split, except latent attention's duplicated down projections and latent
// norms, which every rank holds whole (mla.hpp). (The layer norms are counted split, as they always
// were: a few thousand elements.)
std::vector<double> dense_parameter_tensors_per_rank(const config::TransformerSpec& model, double tensor);
// Of parameters_per_layer(), what every tensor-parallel rank holds whole (latent attention's down
// projections and latent norms; 0 for other models).
double tensor_replicated_parameters(const config::TransformerSpec& model);

// Model FLOPs of one iteration over `global_batch` sequences: forward + backward (3x forward), no
// recompute, attention over the full score matrix (Narayanan et al. SC'21 eq. 3 without the recompute
// pass, generalized to GQA, SwiGLU, any FFN width and any head width: per token and layer
// 2h(w + 2 kv d) + 2wh + 2 m h f + 4sw, w = heads x d, m = 3 for SwiGLU, 2 for GELU). A
// mixture-of-experts layer counts its router, the top_k routed experts each token passes and its shared
// experts instead of 2 m h f: 2hE + 2 k m h f_e + 2 m h f_s (moe.hpp). A layer with a sliding window
// shorter than the sequence counts its window instead of s in 4sw (layer_kinds.hpp, attended_keys()).
double model_flops_per_iteration(const config::TransformerSpec& model, std::int64_t global_batch);

}  // namespace dtsim::models
