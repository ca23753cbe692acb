#include "models/transformer/transformer.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/checked_math.hpp"
#include "core/errors.hpp"
#include "models/mlp/mlp.hpp"
#include "models/transformer/autocast.hpp"
#include "models/transformer/elementwise.hpp"
#include "models/transformer/layer_kinds.hpp"
#include "models/transformer/linear.hpp"
#include "models/transformer/mla.hpp"
#include "models/transformer/moe.hpp"
#include "models/transformer/mtp.hpp"

namespace dtsim::models {

namespace {

using graph::ComputeClass;
using graph::ComputeOp;
using graph::GemmShape;

// Dimensions one tensor-parallel rank works with, for one micro-batch.
struct Dims {
  double a = 2;                   // bytes per activation element
  double b = 1;                   // sequences per micro-batch
  double s = 0;                   // full sequence length
  double keys = 0;                // keys a query may attend to, as model FLOPs count them (attended_keys())
  double executed_keys = 0;       // keys a fused attention kernel computes per query row (see flash_work())
  double sq = 0;                  // query positions on this rank (s / context)
  double tokens = 0;              // b * sq
  double tokens_elementwise = 0;  // tokens held by this rank outside the tensor-parallel region (SP)
  double h = 0;
  double d = 0;      // head dimension (of queries and keys)
  double dv = 0;     // value head dimension (d, unless latent attention says otherwise)
  double heads = 0;  // attention heads on this rank
  double kv = 0;     // key/value heads on this rank (replicated when fewer than the TP degree)
  double n_qkv = 0;  // QKV projection output width on this rank
  double f = 0;      // FFN width on this rank
  double n_up = 0;   // MLP up-projection width on this rank (2f for SwiGLU: gate and up)
  double t = 1;
  double vocab = 0;  // vocabulary on this rank
  bool swiglu = false;
  bool sp = false;
  bool backward_overlap = true;  // column-parallel backward collectives beside the GEMMs
  linear::Fp8Casts fp8;          // FP8 linear layers' casts (linear.hpp)
  double scores = 0;             // attention score elements on this rank: b * heads * sq * s
  elementwise::Kernels kernels;
  int attention_projections = 1;  // linears reading the attention block's input (autocast casts it for each)
  int mlp_projections = 1;        // and the MLP block's
};

// Keys a fused attention kernel computes per query row, averaged over the sequence of s positions, for
// `keys` = attended_keys(). Full attention: the causal half, s / 2. A sliding window of w < s keys: the
// FlashAttention kernels' local attention skips the key tiles wholly outside the window and computes the
// tiles it straddles in full, masking inside them (Dao 2023, arXiv 2307.08691, and flash-attn's
// window_size; cuDNN and Transformer Engine alike): per query the mean window, (w (w + 1) / 2 +
// (s - w) w) / s (the first w positions see fewer), plus one key tile of kAttentionKeyTile, at most the
// causal half.
constexpr double kAttentionKeyTile = 128;
double executed_keys(double s, double keys) {
  if (keys >= s) return s / 2;
  const double mean_window = (keys * (keys + 1) / 2 + (s - keys) * keys) / s;
  return std::min(s / 2, mean_window + kAttentionKeyTile);
}

Dims dims_of(const config::TransformerSpec& m, const ShardConfig& sh) {
  Dims d;
  d.a = activation_bytes_per_element(sh.precision);
  d.fp8 = {.on = sh.precision == config::Precision::fp8, .recipe = sh.fp8_recipe};
  d.b = static_cast<double>(sh.micro_batch);
  d.s = static_cast<double>(m.seq_length);
  d.sq = d.s / static_cast<double>(sh.context);
  d.keys = attended_keys(m);
  d.executed_keys = executed_keys(d.s, d.keys);
  d.tokens = d.b * d.sq;
  d.t = static_cast<double>(sh.tensor);
  d.sp = sh.sequence_parallel && sh.tensor > 1;
  d.backward_overlap = sh.backward_overlap;
  d.tokens_elementwise = d.sp ? d.tokens / d.t : d.tokens;
  d.h = static_cast<double>(m.hidden_size);
  d.d = m.query_key_dim();
  d.dv = m.value_dim();
  d.heads = static_cast<double>(m.heads) / d.t;
  // Latent attention up-projects keys and values for every head on the rank.
  d.kv = m.mla ? d.heads : std::max(1.0, static_cast<double>(m.kv_heads) / d.t);
  d.n_qkv = (d.heads + 2 * d.kv) * d.d;
  d.f = static_cast<double>(m.ffn_hidden_size) / d.t;
  d.swiglu = m.mlp == config::MlpKind::swiglu;
  d.n_up = d.swiglu ? 2 * d.f : d.f;
  // Megatron pads the vocabulary to a multiple of vocab_padding x tp (config::TransformerSpec).
  const double multiple = static_cast<double>(m.vocab_padding) * d.t;
  d.vocab = std::ceil(static_cast<double>(m.vocab_size) / multiple) * multiple / d.t;
  d.scores = d.b * d.heads * d.sq * d.s;
  d.kernels = {.style = m.elementwise_kernels, .rms_norm = d.swiglu, .a = d.a, .autocast = sh.autocast};
  // Eager Llama-style modules project q, k, v and gate, up separately (torchtitan, Hugging Face).
  d.attention_projections = d.kernels.eager() && d.swiglu ? 3 : 1;
  if (m.mla) d.attention_projections = 2;  // the duplicated down projections (mla.hpp)
  d.mlp_projections = d.kernels.eager() && d.swiglu ? 2 : 1;
  return d;
}

// A GEMM dimension: tokens of a micro-batch may pass 2^63 in a huge (infeasible) plan.
std::int64_t dim(double v) { return core::saturating_int64(v + 0.5); }

}  // namespace

LayerOp gemm_op(std::string_view name, double m, double n, double k, double a, double batch,
                bool attention_core) {
  LayerOp op;
  op.name = name;
  op.compute.cls = ComputeClass::gemm;
  op.compute.flops = 2 * m * n * k * batch;
  op.compute.bytes = (m * k + k * n + m * n) * a * batch;
  op.compute.gemm = GemmShape{dim(m), dim(n), dim(k), dim(batch)};
  op.attention_core = attention_core;
  return op;
}

LayerOp memory_op(std::string_view name, double bytes, bool attention_core, core::MemoryClass memory) {
  LayerOp op;
  op.name = name;
  op.compute.cls = ComputeClass::memory;
  op.compute.bytes = bytes;
  op.compute.memory = memory;
  op.attention_core = attention_core;
  return op;
}

LayerOp comm_op(std::string_view name, CommRole role, double bytes, GemmOverlap overlap) {
  LayerOp op;
  op.name = name;
  op.role = role;
  op.comm_bytes = bytes;
  op.overlap = overlap;
  return op;
}

LayerOp weight_grad_op(LayerOp op) {
  op.weight_grad = true;
  return op;
}

namespace {

// Communication entering a tensor-parallel region (forward): nothing without SP, all-gather with SP.
void enter_tp_region(std::vector<LayerOp>& ops, const Dims& d, std::string_view name) {
  if (d.sp)
    ops.push_back(comm_op(name, CommRole::tensor_all_gather, d.tokens * d.h * d.a, GemmOverlap::with_next));
}

// Communication leaving a tensor-parallel region (forward): all-reduce, or reduce-scatter with SP.
void leave_tp_region(std::vector<LayerOp>& ops, const Dims& d, std::string_view name) {
  if (d.t <= 1) return;
  ops.push_back(comm_op(name, d.sp ? CommRole::tensor_reduce_scatter : CommRole::tensor_all_reduce,
                        d.tokens * d.h * d.a, d.sp ? GemmOverlap::with_previous : GemmOverlap::none));
}

// Backward of a column-parallel linear (QKV, MLP up, logits): the data gradient is all-reduced over
// the tensor group (reduce-scattered with sequence parallelism, whose sharded input is first
// re-gathered for the weight gradient). With backward overlap the re-gather runs beside the
// data-gradient GEMM and the reduction beside the weight-gradient GEMM (GemmOverlap::beside_next);
// without, both GEMMs run first and the collectives after them, blocking.
void column_parallel_backward(std::vector<LayerOp>& ops, const Dims& d, LayerOp dgrad, LayerOp wgrad,
                              std::string_view regather, std::string_view reduce) {
  const double bytes = d.tokens * d.h * d.a;
  wgrad.weight_grad = true;
  if (d.t <= 1) {
    ops.push_back(std::move(dgrad));
    ops.push_back(std::move(wgrad));
    return;
  }
  const GemmOverlap beside = d.backward_overlap ? GemmOverlap::beside_next : GemmOverlap::none;
  const LayerOp reduction =
      comm_op(reduce, d.sp ? CommRole::tensor_reduce_scatter : CommRole::tensor_all_reduce, bytes, beside);
  if (d.sp) ops.push_back(weight_grad_op(comm_op(regather, CommRole::tensor_all_gather, bytes, beside)));
  ops.push_back(std::move(dgrad));
  if (d.backward_overlap) ops.push_back(reduction);
  ops.push_back(std::move(wgrad));
  if (!d.backward_overlap) ops.push_back(reduction);
}

// The work a fused attention kernel spreads over the SMs (compute/attention_efficiency.hpp): the query
// rows of one sequence on this rank against their keys, for micro-batch x heads problems. The efficiency
// curve was fitted on causal kernels whose key loops average half their sequence: a loop over
// executed_keys is given as such a kernel's sequence, 2 x executed_keys (s with full attention).
graph::GemmShape flash_work(const Dims& d) {
  return {core::saturating_int64(d.sq), core::saturating_int64(2 * d.executed_keys),
          core::saturating_int64(d.d), core::saturating_int64(d.b * d.heads)};
}

void attention_forward(std::vector<LayerOp>& ops, const config::TransformerSpec& m, const Dims& d,
                       const ShardConfig& sh) {
  if (sh.context > 1) {
    // Ring exchange of K and V chunks: context-1 steps, each passing this rank's current chunk on.
    const double chunk = d.b * d.sq * d.kv * (d.d + d.dv) * d.a;
    ops.push_back(comm_op("context_kv_exchange", CommRole::context_exchange,
                          chunk * (static_cast<double>(sh.context) - 1)));
  }
  const double batch = d.b * d.heads;
  if (m.attention == config::AttentionKind::flash) {
    LayerOp op;
    op.name = "flash_attention";
    op.attention_core = true;
    op.compute.cls = ComputeClass::attention;
    // Q K^T and P V: 2 d and 2 dv FLOPs per score; Q and O, K and V read or written once. The causal
    // mask skips the upper triangle, a window the tiles wholly outside it (executed_keys()).
    op.compute.flops = 2 * d.tokens * d.keys * d.heads * (d.d + d.dv);
    op.compute.executed_fraction = d.executed_keys / d.keys;
    op.compute.bytes = (d.tokens * d.heads * (d.d + d.dv) + d.b * d.s * d.kv * (d.d + d.dv)) * d.a;
    op.compute.gemm = flash_work(d);
    ops.push_back(op);
    return;
  }
  ops.push_back(gemm_op("attention_scores", d.sq, d.s, d.d, d.a, batch, true));
  ops.push_back(memory_op("softmax", 2 * d.a * d.scores, true));
  ops.push_back(memory_op("attention_dropout", (2 * d.a + 1) * d.scores, true));
  ops.push_back(gemm_op("attention_context", d.sq, d.dv, d.s, d.a, batch, true));
}

void attention_backward(std::vector<LayerOp>& ops, const config::TransformerSpec& m, const Dims& d,
                        const ShardConfig& sh) {
  const double batch = d.b * d.heads;
  if (m.attention == config::AttentionKind::flash) {
    LayerOp op;
    op.name = "flash_attention_bwd";
    op.compute.cls = ComputeClass::attention;
    op.compute.flops = 4 * d.tokens * d.keys * d.heads * (d.d + d.dv);
    // The forward's executed keys, and 5 matmuls executed for the 4 counted (the scores are recomputed).
    op.compute.executed_fraction = d.executed_keys / d.keys * 1.25;
    op.compute.bytes = (2 * d.tokens * d.heads * (d.d + d.dv) + 2 * d.b * d.s * d.kv * (d.d + d.dv)) * d.a;
    op.compute.gemm = flash_work(d);
    ops.push_back(op);
  } else {
    ops.push_back(gemm_op("attention_context_dgrad", d.sq, d.s, d.dv, d.a, batch));
    ops.push_back(gemm_op("attention_context_wgrad", d.s, d.dv, d.sq, d.a, batch));
    ops.push_back(memory_op("attention_dropout_bwd", (2 * d.a + 1) * d.scores));
    ops.push_back(memory_op("softmax_bwd", 3 * d.a * d.scores));
    ops.push_back(gemm_op("attention_scores_dgrad", d.sq, d.d, d.s, d.a, batch));
    ops.push_back(gemm_op("attention_scores_wgrad", d.s, d.d, d.sq, d.a, batch));
  }
  if (sh.context > 1) {
    // K/V chunks circulate again and their gradients travel back around the ring.
    const double chunk = d.b * d.sq * d.kv * (d.d + d.dv) * d.a;
    ops.push_back(comm_op("context_kv_exchange_bwd", CommRole::context_exchange,
                          2 * chunk * (static_cast<double>(sh.context) - 1)));
  }
}

// Vocabulary-parallel cross-entropy as Megatron runs it unfused (see the header): one pass over this
// rank's logits per elementwise kernel or reduction, in FP32. Bytes per logit element, read + written:
// cast a + 4 (skipped when activations are FP32 already), max 4, shift 4 + 4, exp 4 + 4, sum 4,
// normalize 4 + 4; backward: scale by the loss gradient 4 + 4, cast back 4 + a. Three all-reduces
// over the tensor-parallel group, one FP32 value per token each: the row maxima (MAX), then the target
// logits and the sums of exponentials (SUM, one call each; the fused variant joins these two).
void cross_entropy(LayerProgram& p, const Dims& d) {
  const double logits = d.tokens * d.vocab;
  const bool cast = d.a < 4;
  auto& fw = p.forward;
  if (d.kernels.eager() && d.t == 1) {  // PyTorch's F.cross_entropy on the FP32 logits (see the header)
    LayerOp forward = memory_op("cross_entropy", logits * ((cast ? d.a + 4 : 0) + 8), false,
                                core::MemoryClass::cross_entropy_forward);
    forward.compute.kernels = cast ? 3 : 2;
    fw.push_back(forward);
    LayerOp backward = memory_op("cross_entropy_bwd", logits * (16 + (cast ? 4 + d.a : 0)), false,
                                 core::MemoryClass::cross_entropy_backward);
    backward.compute.kernels = cast ? 4 : 3;
    p.backward.push_back(backward);
    return;
  }
  if (cast) {
    fw.push_back(memory_op("logits_to_fp32", logits * (d.a + 4), false, core::MemoryClass::widening_cast));
  }
  fw.push_back(memory_op("cross_entropy_max", logits * 4));
  if (d.t > 1)
    fw.push_back(comm_op("cross_entropy_max_tp_reduce", CommRole::tensor_all_reduce, d.tokens * 4));
  fw.push_back(memory_op("cross_entropy_shift", logits * 8));
  fw.push_back(memory_op("cross_entropy_exp", logits * 8));
  fw.push_back(memory_op("cross_entropy_sum", logits * 4));
  if (d.t > 1) {
    fw.push_back(comm_op("cross_entropy_target_tp_reduce", CommRole::tensor_all_reduce, d.tokens * 4));
    fw.push_back(comm_op("cross_entropy_sum_tp_reduce", CommRole::tensor_all_reduce, d.tokens * 4));
  }
  fw.push_back(memory_op("cross_entropy_normalize", logits * 8));
  auto& bw = p.backward;
  bw.push_back(memory_op("cross_entropy_bwd", logits * 8));
  if (cast) bw.push_back(memory_op("logits_grad_from_fp32", logits * (4 + d.a)));
}

// The names of an MLP block's ops (static strings: LayerOp keeps views): the dense layer's, or a
// mixture-of-experts layer's shared experts'.
struct MlpNames {
  std::string_view all_gather, input_casts, up_input_cast, up_input_amax, up_weight_cast, up_weight_amax, up,
      down_input_cast, down_input_amax, down_weight_cast, down_weight_amax, down, tp_reduce;
  std::string_view down_bias_grad, grad_all_gather, down_grad_cast, down_grad_amax, down_dgrad, down_wgrad,
      up_bias_grad, up_grad_cast, up_grad_amax, up_input_transpose, up_dgrad, up_wgrad, input_regather,
      grad_tp_reduce, input_grad_casts, input_grad_sum;
};
constexpr MlpNames kMlpNames{"mlp_all_gather",
                             "autocast_mlp_input_casts",
                             "mlp_up_input_fp8_cast",
                             "mlp_up_input_fp8_amax",
                             "mlp_up_weight_fp8_cast",
                             "mlp_up_weight_fp8_amax",
                             "mlp_up",
                             "mlp_down_input_fp8_cast",
                             "mlp_down_input_fp8_amax",
                             "mlp_down_weight_fp8_cast",
                             "mlp_down_weight_fp8_amax",
                             "mlp_down",
                             "mlp_tp_reduce",
                             "mlp_down_bias_grad",
                             "mlp_grad_all_gather",
                             "mlp_down_grad_fp8_cast",
                             "mlp_down_grad_fp8_amax",
                             "mlp_down_dgrad",
                             "mlp_down_wgrad",
                             "mlp_up_bias_grad",
                             "mlp_up_grad_fp8_cast",
                             "mlp_up_grad_fp8_amax",
                             "mlp_up_input_fp8_transpose",
                             "mlp_up_dgrad",
                             "mlp_up_wgrad",
                             "mlp_input_regather",
                             "mlp_grad_tp_reduce",
                             "autocast_mlp_input_grad_casts",
                             "autocast_mlp_input_grad_sum"};
constexpr MlpNames kSharedExpertNames{"shared_expert_all_gather",
                                      "autocast_shared_expert_input_casts",
                                      "shared_expert_up_input_fp8_cast",
                                      "shared_expert_up_input_fp8_amax",
                                      "shared_expert_up_weight_fp8_cast",
                                      "shared_expert_up_weight_fp8_amax",
                                      "shared_expert_up",
                                      "shared_expert_down_input_fp8_cast",
                                      "shared_expert_down_input_fp8_amax",
                                      "shared_expert_down_weight_fp8_cast",
                                      "shared_expert_down_weight_fp8_amax",
                                      "shared_expert_down",
                                      "shared_expert_tp_reduce",
                                      "shared_expert_down_bias_grad",
                                      "shared_expert_grad_all_gather",
                                      "shared_expert_down_grad_fp8_cast",
                                      "shared_expert_down_grad_fp8_amax",
                                      "shared_expert_down_dgrad",
                                      "shared_expert_down_wgrad",
                                      "shared_expert_up_bias_grad",
                                      "shared_expert_up_grad_fp8_cast",
                                      "shared_expert_up_grad_fp8_amax",
                                      "shared_expert_up_input_fp8_transpose",
                                      "shared_expert_up_dgrad",
                                      "shared_expert_up_wgrad",
                                      "shared_expert_input_regather",
                                      "shared_expert_grad_tp_reduce",
                                      "autocast_shared_expert_input_grad_casts",
                                      "autocast_shared_expert_input_grad_sum"};

// The MLP block between its norm and its residual addition, of width d.f on this rank.
void mlp_forward(std::vector<LayerOp>& fw, const Dims& d, const MlpNames& n) {
  const double a = d.a;
  enter_tp_region(fw, d, n.all_gather);
  if (d.kernels.autocast) autocast::input_casts(fw, n.input_casts, d.tokens * d.h, d.mlp_projections, a);
  linear::input_cast_forward(fw, {n.up_input_cast, n.up_input_amax}, d.tokens * d.h * d.mlp_projections, true,
                             d.fp8);
  linear::weight_cast_forward(fw, {n.up_weight_cast, n.up_weight_amax}, d.h * d.n_up, d.fp8);
  fw.push_back(linear::gemm(n.up, d.tokens, d.n_up, d.h, a));
  fw.push_back(elementwise::activation_forward(d.kernels, d.tokens * d.f));
  linear::input_cast_forward(fw, {n.down_input_cast, n.down_input_amax}, d.tokens * d.f, false, d.fp8);
  linear::weight_cast_forward(fw, {n.down_weight_cast, n.down_weight_amax}, d.f * d.h, d.fp8);
  fw.push_back(linear::gemm(n.down, d.tokens, d.h, d.f, a));
  leave_tp_region(fw, d, n.tp_reduce);
}

void mlp_backward(std::vector<LayerOp>& bw, const Dims& d, const MlpNames& n) {
  const double a = d.a;
  const auto& k = d.kernels;
  elementwise::bias_grad(bw, n.down_bias_grad, k, d.tokens_elementwise * d.h);
  if (d.sp) {
    bw.push_back(
        comm_op(n.grad_all_gather, CommRole::tensor_all_gather, d.tokens * d.h * a, GemmOverlap::with_next));
  }
  linear::grad_cast_backward(bw, {n.down_grad_cast, n.down_grad_amax}, d.tokens * d.h, d.fp8);
  bw.push_back(linear::gemm(n.down_dgrad, d.tokens, d.f, d.h, a));
  bw.push_back(weight_grad_op(linear::gemm(n.down_wgrad, d.f, d.h, d.tokens, a)));
  bw.push_back(elementwise::activation_backward(k, d.tokens * d.f));
  elementwise::bias_grad(bw, n.up_bias_grad, k, d.tokens * d.n_up);
  linear::grad_cast_backward(bw, {n.up_grad_cast, n.up_grad_amax}, d.tokens * d.n_up, d.fp8);
  linear::input_transpose_backward(bw, n.up_input_transpose, d.tokens * d.h, d.fp8);
  column_parallel_backward(bw, d, linear::gemm(n.up_dgrad, d.tokens, d.h, d.n_up, a),
                           linear::gemm(n.up_wgrad, d.h, d.n_up, d.tokens, a), n.input_regather,
                           n.grad_tp_reduce);
  elementwise::up_projection_grad_sum(bw, k, d.tokens * d.h);
  if (k.autocast) {
    autocast::input_grad_casts(bw, n.input_grad_casts, n.input_grad_sum, d.tokens * d.h, d.mlp_projections,
                               a);
  }
}

// A mixture-of-experts layer's shared experts: a dense MLP of their summed width.
Dims shared_expert_dims(Dims d, const config::TransformerSpec& m) {
  d.f = static_cast<double>(m.moe->shared_ffn_hidden_size) / d.t;
  d.n_up = d.swiglu ? 2 * d.f : d.f;
  return d;
}

// The layer's parameter gradients accumulated by kernels of their own (config::GradAccumulation), after
// the layer's backward pass: one add per parameter tensor into its FP32 gradient (Megatron's main_grad,
// megatron/model/distributed.py: param.main_grad.add_(param.grad.data) in a hook on each parameter),
// 4 + a + 4 bytes per element on this rank (3a without master weights: a 16-bit .grad). The tensors: the
// norms' weights (and LayerNorm biases, replicated over the tensor-parallel group), the linears' biases (QKV
// and MLP-up split over it, the output projections' replicated), and, unfused, the four weights (split). A
// mixture-of-experts layer has no dense MLP: its router's weight (replicated; a plain F.linear in
// Megatron-Core's moe/router.py, so accumulated by the hook even when the linears fuse it), its shared
// experts as a dense MLP's tensors and, unfused, the rank's local experts' up and down weights as one tensor
// each (Megatron-Core's GroupedMLP, as layer_parameter_tensors() counts them).
void grad_accumulation(std::vector<LayerOp>& bw, const Dims& d, const config::TransformerSpec& m,
                       const ShardConfig& sh) {
  const config::GradAccumulation how = sh.grad_accumulation;
  if (how == config::GradAccumulation::none) return;
  const bool unfused = how == config::GradAccumulation::unfused;
  const double norm_tensors = d.swiglu ? 2 : 4;
  double tensors = norm_tensors;
  double elements = norm_tensors * d.h;
  // A linear's bias (GPT-style models only) and, unfused, its weight.
  const auto linear = [&](double weight, double bias) {
    if (!d.swiglu) {
      tensors += 1;
      elements += bias;
    }
    if (unfused) {
      tensors += 1;
      elements += weight;
    }
  };
  if (m.mla) {
    // Latent attention (mla.hpp): the latent norms' tensors (replicated), unfused its projections'
    // weights; no biases.
    const double per_norm = d.swiglu ? 1 : 2;
    tensors += per_norm * (m.mla->q_lora_rank > 0 ? 2 : 1);
    elements += per_norm * static_cast<double>(m.mla->q_lora_rank + m.mla->kv_lora_rank);
    if (unfused) {
      tensors += mla_weight_tensors(*m.mla);
      elements += mla_projection_weights(*m.mla, d.h, d.heads);
    }
  } else {
    linear(d.h * d.n_qkv, d.n_qkv);
  }
  linear(d.heads * d.dv * d.h, d.h);
  const auto mlp = [&](const Dims& w) {
    linear(d.h * w.n_up, w.f);
    linear(w.f * d.h, d.h);
  };
  if (!m.moe) {
    mlp(d);
  } else {
    tensors += 1;
    elements += d.h * static_cast<double>(m.moe->experts);
    if (m.moe->shared_ffn_hidden_size > 0) mlp(shared_expert_dims(d, m));
    if (unfused) {  // the rank's experts / expert experts, split over the expert tensor group
      tensors += 2;
      elements += routed_expert_parameters(m) / static_cast<double>(sh.expert * sh.expert_tensor_degree());
    }
  }
  // Into the FP32 main gradient (read, add the 16-bit gradient, write), or without master weights into
  // the 16-bit .grad (TrainingSpec::master_weights).
  const double bytes_per_element = sh.master_weights ? 8 + d.a : 3 * d.a;
  LayerOp op =
      memory_op("grad_accumulation", bytes_per_element * elements, false, core::MemoryClass::mixed_add);
  op.compute.kernels = static_cast<int>(tensors);
  op.compute.tensor_calls = true;  // one add_ per tensor from the hook, no module around it
  bw.push_back(weight_grad_op(op));
}

MoeShard moe_shard(const Dims& d, const ShardConfig& sh) {
  return MoeShard{.tokens = d.tokens,
                  .routed = d.tokens_elementwise,
                  .h = d.h,
                  .a = d.a,
                  .expert_tensor = static_cast<double>(sh.expert_tensor_degree()),
                  .expert = static_cast<double>(sh.expert),
                  .swiglu = d.swiglu,
                  .kernels = d.kernels,
                  .fp8 = d.fp8};
}

TokenShard token_shard(const Dims& d) {
  return TokenShard{.tokens = d.tokens,
                    .tokens_elementwise = d.tokens_elementwise,
                    .h = d.h,
                    .a = d.a,
                    .t = d.t,
                    .sp = d.sp,
                    .backward_overlap = d.backward_overlap,
                    .kernels = d.kernels};
}

MlaShard mla_shard(const Dims& d) {
  MlaShard shard;
  static_cast<TokenShard&>(shard) = token_shard(d);
  shard.heads = d.heads;
  shard.fp8 = d.fp8;
  return shard;
}

double norm_params(const config::TransformerSpec& m) {
  // LayerNorm (weight and bias) for GPT-style models, RMSNorm (weight) for SwiGLU (Llama-style) ones.
  const double h = static_cast<double>(m.hidden_size);
  return m.mlp == config::MlpKind::swiglu ? h : 2 * h;
}

}  // namespace

double activation_bytes_per_element(config::Precision p) {
  switch (p) {
    case config::Precision::fp32:
    case config::Precision::tf32:
      return 4;
    case config::Precision::fp16:
    case config::Precision::bf16:
    case config::Precision::fp8:  // FP8 GEMM inputs, BF16 activations between kernels
      return 2;
  }
  return 2;
}

LayerProgram transformer_layer(const config::TransformerSpec& m, const ShardConfig& sh) {
  if (m.kind == config::ModelKind::mlp) return mlp_hidden_layer(m, sh);
  DTSIM_CHECK(uniform_attention(m), "a layer program is costed for one kind of layer (layer_kinds.hpp)");
  const Dims d = dims_of(m, sh);
  const double a = d.a;
  const double he = d.tokens_elementwise * d.h;  // elements of the residual stream on this rank
  LayerProgram p;
  auto& fw = p.forward;
  const auto& k = d.kernels;
  const double projection_weights = m.mla ? mla_projection_weights(*m.mla, d.h, d.heads) : d.h * d.n_qkv;
  const double weights = projection_weights + d.heads * d.dv * d.h + d.h * d.n_up + d.f * d.h;
  const int weight_tensors =
      (m.mla ? mla_weight_tensors(*m.mla) : d.attention_projections) + 1 + d.mlp_projections + 1;
  if (k.autocast) fw.push_back(autocast::weight_casts("autocast_weight_casts", weights, weight_tensors, a));
  fw.push_back(elementwise::norm_forward("input_norm", k, he));
  fw.back().recompute_tag = RecomputeTag::layernorm;
  const double rotated = d.tokens * (d.heads + d.kv) * d.d;
  if (m.mla) {
    if (k.autocast) {
      autocast::input_casts(fw, "autocast_attention_input_casts", he, d.attention_projections, a);
    }
    mla_projections_forward(fw, *m.mla, mla_shard(d));
  } else {
    enter_tp_region(fw, d, "attention_all_gather");
    if (k.autocast) {
      autocast::input_casts(fw, "autocast_attention_input_casts", d.tokens * d.h, d.attention_projections, a);
    }
    linear::input_cast_forward(fw, {"qkv_input_fp8_cast", "qkv_input_fp8_amax"},
                               d.tokens * d.h * d.attention_projections, true, d.fp8);
    linear::weight_cast_forward(fw, {"qkv_weight_fp8_cast", "qkv_weight_fp8_amax"}, d.h * d.n_qkv, d.fp8);
    fw.push_back(linear::gemm("qkv_projection", d.tokens, d.n_qkv, d.h, a));
    elementwise::bias_add(fw, "qkv_bias_add", k, d.tokens * d.n_qkv);
    // Llama-style models rotate queries and keys (RoPE, Su et al. 2021).
    if (d.swiglu) fw.push_back(elementwise::rotary("rotary_embedding", k, rotated));
    elementwise::repeat_kv(fw, "repeat_kv", k, d.tokens, d.heads, d.kv, d.d);
  }
  attention_forward(fw, m, d, sh);
  elementwise::attention_output_layout(fw, "attention_output_layout", k, d.tokens * d.heads * d.dv);
  linear::input_cast_forward(fw,
                             {"attention_projection_input_fp8_cast", "attention_projection_input_fp8_amax"},
                             d.tokens * d.heads * d.dv, false, d.fp8);
  linear::weight_cast_forward(
      fw, {"attention_projection_weight_fp8_cast", "attention_projection_weight_fp8_amax"},
      d.heads * d.dv * d.h, d.fp8);
  fw.push_back(linear::gemm("attention_projection", d.tokens, d.h, d.heads * d.dv, a));
  leave_tp_region(fw, d, "attention_tp_reduce");
  fw.push_back(elementwise::residual_forward("attention_residual", k, he));
  fw.push_back(elementwise::norm_forward("mlp_norm", k, he));
  fw.back().recompute_tag = RecomputeTag::layernorm;
  if (m.moe) {
    moe_forward(fw, *m.moe, moe_shard(d, sh));
    if (m.moe->shared_ffn_hidden_size > 0) mlp_forward(fw, shared_expert_dims(d, m), kSharedExpertNames);
  } else {
    mlp_forward(fw, d, kMlpNames);
  }
  fw.push_back(elementwise::residual_forward("mlp_residual", k, he));

  auto& bw = p.backward;
  bw.push_back(elementwise::residual_backward("mlp_residual_bwd", k, he));
  if (m.moe) {
    if (m.moe->shared_ffn_hidden_size > 0) mlp_backward(bw, shared_expert_dims(d, m), kSharedExpertNames);
    moe_backward(bw, *m.moe, moe_shard(d, sh));
  } else {
    mlp_backward(bw, d, kMlpNames);
  }
  bw.push_back(elementwise::norm_backward("mlp_norm_bwd", k, he));
  elementwise::residual_grad_sum(bw, "mlp_input_grad_sum", k, he);
  bw.push_back(elementwise::residual_backward("attention_residual_bwd", k, he));
  elementwise::bias_grad(bw, "attention_projection_bias_grad", k, he);
  if (d.sp) {
    bw.push_back(comm_op("attention_grad_all_gather", CommRole::tensor_all_gather, d.tokens * d.h * a,
                         GemmOverlap::with_next));
  }
  linear::grad_cast_backward(bw, {"attention_projection_grad_fp8_cast", "attention_projection_grad_fp8_amax"}, d.tokens * d.h, d.fp8);
  bw.push_back(linear::gemm("attention_projection_dgrad", d.tokens, d.heads * d.dv, d.h, a));
  bw.push_back(weight_grad_op(linear::gemm("attention_projection_wgrad", d.heads * d.dv, d.h, d.tokens, a)));
  elementwise::attention_output_layout(bw, "attention_output_layout_bwd", k, d.tokens * d.heads * d.dv);
  attention_backward(bw, m, d, sh);
  if (m.mla) {
    mla_projections_backward(bw, *m.mla, mla_shard(d));
    if (k.autocast) {
      autocast::input_grad_casts(bw, "autocast_attention_input_grad_casts",
                                 "autocast_attention_input_grad_sum", he, d.attention_projections, a);
    }
  } else {
    if (m.attention == config::AttentionKind::standard)
      elementwise::attention_core_grad_extras(bw, k, d.tokens * d.heads * d.d, d.tokens * d.n_qkv);
    elementwise::repeat_kv(bw, "repeat_kv_bwd", k, d.tokens, d.heads, d.kv, d.d);
    if (d.swiglu) bw.push_back(elementwise::rotary("rotary_embedding_bwd", k, rotated));
    linear::grad_cast_backward(bw, {"qkv_grad_fp8_cast", "qkv_grad_fp8_amax"}, d.tokens * d.n_qkv, d.fp8);
    elementwise::bias_grad(bw, "qkv_bias_grad", k, d.tokens * d.n_qkv);
    linear::input_transpose_backward(bw, "qkv_input_fp8_transpose", d.tokens * d.h, d.fp8);
    column_parallel_backward(bw, d, linear::gemm("qkv_projection_dgrad", d.tokens, d.h, d.n_qkv, a),
                             linear::gemm("qkv_projection_wgrad", d.h, d.n_qkv, d.tokens, a),
                             "attention_input_regather", "attention_grad_tp_reduce");
    if (k.autocast) {
      autocast::input_grad_casts(bw, "autocast_attention_input_grad_casts",
                                 "autocast_attention_input_grad_sum", d.tokens * d.h, d.attention_projections,
                                 a);
    }
  }
  bw.push_back(elementwise::norm_backward("input_norm_bwd", k, he));
  elementwise::residual_grad_sum(bw, "attention_input_grad_sum", k, he);
  if (k.autocast) bw.push_back(autocast::weight_grad_casts("autocast_weight_grad_casts", weights, weight_tensors, a));
  grad_accumulation(bw, d, m, sh);
  return p;
}

LayerProgram embedding_layer(const config::TransformerSpec& m, const ShardConfig& sh) {
  if (m.kind == config::ModelKind::mlp) return mlp_input_layer(m, sh);
  const Dims d = dims_of(m, sh);
  LayerProgram p;
  // The table's elements: FP32 with autocast (autocast.hpp), which gathers and adds in FP32.
  const double e = d.kernels.autocast ? 4.0 : d.a;
  // Vocabulary-parallel lookup: each rank gathers the rows of its shard, partial sums are reduced.
  p.forward.push_back(memory_op("embedding_lookup", 2 * d.tokens * d.h * e));
  leave_tp_region(p.forward, d, "embedding_tp_reduce");
  p.forward.push_back(memory_op("embedding_dropout", d.tokens_elementwise * d.h * (2 * e + 1)));
  // Its backward feeds the table's gradient only (no layer before it): all of it is weight gradient.
  p.backward.push_back(
      weight_grad_op(memory_op("embedding_dropout_bwd", d.tokens_elementwise * d.h * (2 * e + 1))));
  if (d.sp)
    p.backward.push_back(weight_grad_op(
        comm_op("embedding_grad_all_gather", CommRole::tensor_all_gather, d.tokens * d.h * d.a)));
  p.backward.push_back(weight_grad_op(memory_op("embedding_grad_accumulate", 3 * d.tokens * d.h * e)));
  return p;
}

LayerProgram head_layer(const config::TransformerSpec& m, const ShardConfig& sh) {
  if (m.kind == config::ModelKind::mlp) return mlp_output_layer(m, sh);
  const Dims d = dims_of(m, sh);
  const double he = d.tokens_elementwise * d.h;
  LayerProgram p;
  auto& fw = p.forward;
  fw.push_back(elementwise::norm_forward("final_norm", d.kernels, he));
  enter_tp_region(fw, d, "logits_all_gather");
  // The output projection's FP32 weight (the embedding's when tied) and its input, cast for the GEMM.
  const bool casts = d.kernels.autocast;
  if (casts) {
    fw.push_back(autocast::weight_casts("autocast_logits_weight_cast", d.h * d.vocab, 1, d.a));
    autocast::input_casts(fw, "autocast_logits_input_cast", d.tokens * d.h, 1, d.a);
  }
  fw.push_back(gemm_op("logits", d.tokens, d.vocab, d.h, d.a));
  cross_entropy(p, d);
  auto& bw = p.backward;
  column_parallel_backward(bw, d, gemm_op("logits_dgrad", d.tokens, d.h, d.vocab, d.a),
                           gemm_op("logits_wgrad", d.h, d.vocab, d.tokens, d.a), "logits_input_regather",
                           "logits_grad_tp_reduce");
  if (casts) {
    autocast::input_grad_casts(bw, "autocast_logits_input_grad_cast", "autocast_logits_input_grad_sum",
                               d.tokens * d.h, 1, d.a);
    bw.push_back(autocast::weight_grad_casts("autocast_logits_weight_grad_cast", d.h * d.vocab, 1, d.a));
  }
  bw.push_back(elementwise::norm_backward("final_norm_bwd", d.kernels, he));
  return p;
}

LayerProgram mtp_projection_layer(const config::TransformerSpec& m, const ShardConfig& sh) {
  const Dims d = dims_of(m, sh);
  return mtp_projection_program(token_shard(d));
}

double parameters_per_layer(const config::TransformerSpec& m) {
  const std::vector<double> tensors = layer_parameter_tensors(m);
  return std::accumulate(tensors.begin(), tensors.end(), 0.0);
}

namespace {

enum class RoutedExperts { include, exclude };

std::vector<double> layer_tensors(const config::TransformerSpec& m, RoutedExperts routed) {
  const double h = static_cast<double>(m.hidden_size);
  if (m.kind == config::ModelKind::mlp) return {mlp_parameters_per_layer(m) - h, h};
  const double d = m.attention_head_dim();
  const double width = m.attention_width();  // the query heads: h unless head_dim says otherwise
  const double qkv_out = width + 2 * static_cast<double>(m.kv_heads) * d;
  const double f = static_cast<double>(m.ffn_hidden_size);
  const bool swiglu = m.mlp == config::MlpKind::swiglu;
  // LayerNorm has a weight and a bias, RMSNorm a weight (norm_params()).
  const std::vector<double> norm = swiglu ? std::vector<double>{h} : std::vector<double>{h, h};
  std::vector<double> out = norm;
  const auto weight = [&](double elements, double bias) {
    out.push_back(elements);
    if (!swiglu) out.push_back(bias);
  };
  if (m.mla) {
    const std::vector<double> projections =
        mla_parameter_tensors(*m.mla, h, static_cast<double>(m.heads), static_cast<int>(norm.size()));
    out.insert(out.end(), projections.begin(), projections.end());
  } else {
    weight(h * qkv_out, qkv_out);
  }
  weight(width * h, h);
  out.insert(out.end(), norm.begin(), norm.end());
  if (m.moe) {
    // The router, every routed expert's up and down weights as one tensor each (Megatron-Core's
    // GroupedMLP), the shared experts' as a dense MLP's.
    const double experts = static_cast<double>(m.moe->experts);
    const double fe = static_cast<double>(m.moe->expert_ffn_hidden_size);
    out.push_back(h * experts);
    if (routed == RoutedExperts::include) {
      out.push_back(experts * h * (swiglu ? 2 : 1) * fe);
      out.push_back(experts * fe * h);
    }
    const double fs = static_cast<double>(m.moe->shared_ffn_hidden_size);
    if (fs > 0) {
      weight((swiglu ? 2 : 1) * h * fs, fs);
      weight(fs * h, h);
    }
    return out;
  }
  weight((swiglu ? 2 : 1) * h * f, f);
  weight(f * h, h);
  return out;
}

}  // namespace

std::vector<double> layer_parameter_tensors(const config::TransformerSpec& m) {
  return layer_tensors(m, RoutedExperts::include);
}

std::vector<double> dense_parameter_tensors_per_rank(const config::TransformerSpec& m, double tensor) {
  std::vector<double> out = layer_tensors(m, RoutedExperts::exclude);
  std::vector<bool> whole(out.size(), false);
  if (m.mla && m.kind != config::ModelKind::mlp) {
    // After the input norm's tensors, the projections' (layer_parameter_tensors order).
    const int norm_tensors = m.mlp == config::MlpKind::swiglu ? 1 : 2;
    const std::vector<bool> replicated = mla_replicated_tensors(*m.mla, norm_tensors);
    std::copy(replicated.begin(), replicated.end(), whole.begin() + norm_tensors);
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    if (!whole[i]) out[i] /= tensor;
  }
  return out;
}

double tensor_replicated_parameters(const config::TransformerSpec& m) {
  if (!m.mla || m.kind == config::ModelKind::mlp) return 0.0;
  const int norm_tensors = m.mlp == config::MlpKind::swiglu ? 1 : 2;
  const std::vector<double> tensors = mla_parameter_tensors(*m.mla, static_cast<double>(m.hidden_size),
                                                            static_cast<double>(m.heads), norm_tensors);
  const std::vector<bool> replicated = mla_replicated_tensors(*m.mla, norm_tensors);
  double sum = 0.0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    if (replicated[i]) sum += tensors[i];
  }
  return sum;
}

double embedding_parameters(const config::TransformerSpec& m) {
  if (m.kind == config::ModelKind::mlp) return mlp_input_parameters(m);
  const double h = static_cast<double>(m.hidden_size);
  const double positions = m.mlp == config::MlpKind::swiglu ? 0 : static_cast<double>(m.seq_length) * h;
  return static_cast<double>(m.vocab_size) * h + positions;
}

double head_parameters(const config::TransformerSpec& m) {
  if (m.kind == config::ModelKind::mlp) return mlp_output_parameters(m);
  const double output =
      m.tied_embeddings ? 0 : static_cast<double>(m.vocab_size) * static_cast<double>(m.hidden_size);
  return norm_params(m) + output;
}

double total_parameters(const config::TransformerSpec& m) {
  const LayerKinds kinds(m);
  const std::vector<std::int64_t> layers = kinds.counts(0, m.layers);
  double sum = embedding_parameters(m) + head_parameters(m);
  for (std::size_t k = 0; k < kinds.count(); ++k)
    sum += static_cast<double>(layers[k]) * parameters_per_layer(kinds.model(k));
  // Multi-token prediction: each module's projection, norms and a layer of the last layer's kind.
  const double last_layer = parameters_per_layer(kinds.model(kinds.of_layer(m.layers - 1)));
  return sum + static_cast<double>(m.mtp_layers) * (mtp_projection_parameters(m) + last_layer);
}

namespace {

// Model FLOPs of one layer of a uniform model per token, forward (model_flops_per_iteration()).
double layer_flops_per_token(const config::TransformerSpec& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double keys = attended_keys(m);  // the sequence, or a shorter sliding window
  const double d = m.attention_head_dim();
  const double width = m.attention_width();
  const double qkv_out = width + 2 * static_cast<double>(m.kv_heads) * d;
  const double f = static_cast<double>(m.ffn_hidden_size);
  const double mlp_matrices = m.mlp == config::MlpKind::swiglu ? 3 : 2;
  // A mixture-of-experts layer: its router, the top_k experts a token passes and the shared experts.
  const double mlp = m.moe ? 2 * h * static_cast<double>(m.moe->experts) + 2 * active_routed_parameters(m) +
                                 2 * mlp_matrices * h * static_cast<double>(m.moe->shared_ffn_hidden_size)
                           : 2 * mlp_matrices * h * f;
  // Latent attention: its projections, and the scores at the query-key width, the context at the value
  // width (2 keys heads (d_qk + d_v)).
  const double per_token_layer =
      m.mla ? 2 * mla_projection_weights(*m.mla, h, static_cast<double>(m.heads)) + 2 * width * h + mlp +
                  2 * keys * static_cast<double>(m.heads) * (m.query_key_dim() + m.value_dim())
            : 2 * h * qkv_out + 2 * width * h + mlp + 4 * keys * width;
  return per_token_layer;
}

}  // namespace

double model_flops_per_iteration(const config::TransformerSpec& m, std::int64_t global_batch) {
  if (m.kind == config::ModelKind::mlp) return mlp_model_flops_per_iteration(m, global_batch);
  const LayerKinds kinds(m);
  const std::vector<std::int64_t> layers = kinds.counts(0, m.layers);
  const double h = static_cast<double>(m.hidden_size);
  const double logits = 2 * h * static_cast<double>(m.vocab_size);
  double per_token = logits;
  for (std::size_t k = 0; k < kinds.count(); ++k)
    per_token += static_cast<double>(layers[k]) * layer_flops_per_token(kinds.model(k));
  // Multi-token prediction: per module its projection 2h -> h, a layer of the last layer's kind and
  // the logits again (mtp.hpp).
  if (m.mtp_layers > 0) {
    const double module =
        2 * 2 * h * h + layer_flops_per_token(kinds.model(kinds.of_layer(m.layers - 1))) + logits;
    per_token += static_cast<double>(m.mtp_layers) * module;
  }
  return 3 * per_token * static_cast<double>(m.seq_length) * static_cast<double>(global_batch);
}

}  // namespace dtsim::models
