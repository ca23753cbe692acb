// Multi-head latent attention (MLA): the projections of a layer whose attention compresses its queries
// and its keys and values into low-rank latents (config::MlaSpec), per micro-batch and tensor-parallel
// rank, in execution order. The attention core and the output projection are the transformer's
// (transformer.hpp), at the head widths MLA gives them: queries and keys qk_nope_head_dim +
// qk_rope_head_dim, values v_head_dim, every head with its own keys and values.
//
// Sources: DeepSeek-AI, "DeepSeek-V2" (arXiv 2405.04434), Sec. 2.1.2-2.1.3, eqs. 9-19: c_kv = W_DKV h
// (rank d_c), k_C, v_C = W_UK c_kv, W_UV c_kv; c_q = W_DQ h (rank d_c'), q_C = W_UQ c_q; the decoupled
// rotary key k_R = RoPE(W_KR h) shared by the heads, q_R = RoPE(W_QR c_q) per head; DeepSeek-V3
// (arXiv 2412.19437), Sec. 2.1.1 (the same, RMSNorm after each down projection). As Megatron-Core runs
// it (megatron/core/transformer/multi_latent_attention.py, MLASelfAttention with the Transformer Engine
// spec): the down projections linear_q_down_proj (h -> q_lora_rank) and linear_kv_down_proj
// (h -> kv_lora_rank + qk_rope_head_dim) are duplicated on every tensor-parallel rank (TELinear,
// parallel_mode "duplicated") and run on the rank's own tokens (its sequence shard with sequence
// parallelism); q_layernorm and kv_layernorm normalize the latents; the up projections linear_q_up_proj
// (q_lora_rank -> heads x (qk_nope + qk_rope)) and linear_kv_up_proj (kv_lora_rank -> heads x (qk_nope +
// v)) are column-parallel with the latent norms fused in (TELayerNormColumnParallelLinear: the norm on
// the rank's tokens, then the gather), so with sequence parallelism it is the normalized latents (and
// the rotary key) that are all-gathered before them, q_lora_rank + kv_lora_rank + qk_rope_head_dim wide
// instead of the hidden size, and their gradients that are reduce-scattered in the backward pass; without a
// query latent (q_lora_rank 0) linear_q_proj projects the gathered hidden states directly. Rotary embedding
// applies to the queries' rotary part and the shared key.
//
// Not costed: the all-reduce over the tensor-parallel group of the duplicated down projections' and
// latent norms' weight gradients (once per iteration, (h (q_lora_rank + kv_lora_rank + qk_rope_head_dim)
// + q_lora_rank + kv_lora_rank) elements per layer, as Megatron-Core reduces the weights it marks
// sequence-parallel); Megatron-Core's optional fused down projection (linear_qkv_down_proj).
//
// Selective recompute's "mla_up_proj" (Megatron-Core multi_latent_attention.py, recompute_up_proj:
// qkv_up_proj_and_rope_apply under CheckpointWithoutOutput, its outputs discarded once the attention
// core has read them) reruns before the layer's backward the latent norms fused into the up
// projections, the up projections (with their FP8 casts) and the rotary embedding, not the latents'
// all-gather; the layer then keeps no queries, keys and values at the heads' widths
// (parallel/memory_model.cpp).
#pragma once

#include <vector>

#include "config/scenario.hpp"
#include "models/transformer/elementwise.hpp"
#include "models/transformer/linear.hpp"
#include "models/transformer/token_shard.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::models {

// One tensor-parallel rank's share of a micro-batch, as the projections see it: its tokens, the heads
// on the rank and an FP8 run's casts.
struct MlaShard : TokenShard {
  double heads = 0.0;  // attention heads on this rank
  linear::Fp8Casts fp8;
};

// From the attention block's normalized input to the queries, keys and values the attention core reads
// (after the rotary embedding).
void mla_projections_forward(std::vector<LayerOp>& ops, const config::MlaSpec& mla, const MlaShard& shard);
// From the gradients of the queries, keys and values to the gradient of the attention block's input
// (before the input norm's backward).
void mla_projections_backward(std::vector<LayerOp>& ops, const config::MlaSpec& mla, const MlaShard& shard);

// The projections' parameter tensors (whole model, element counts), in the order the forward pass uses
// them: q_down, q_norm, q_up (or q alone without a query latent), kv_down, kv_norm, kv_up. `norm_tensors`:
// 1 for RMSNorm (weight), 2 for LayerNorm (weight and bias).
std::vector<double> mla_parameter_tensors(const config::MlaSpec& mla, double h, double heads,
                                          int norm_tensors);

// Which of mla_parameter_tensors() every tensor-parallel rank holds whole (the duplicated down
// projections and the latent norms), in the same order.
std::vector<bool> mla_replicated_tensors(const config::MlaSpec& mla, int norm_tensors);

// Weights of the projections for `heads` heads, the down projections whole: one tensor-parallel rank's
// with its heads, the model's with all (whose forward FLOPs per token are twice that). And how many
// weight tensors that is.
double mla_projection_weights(const config::MlaSpec& mla, double h, double heads);
int mla_weight_tensors(const config::MlaSpec& mla);

}  // namespace dtsim::models
