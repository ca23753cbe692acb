#include "models/transformer/mla.hpp"

namespace dtsim::models {

namespace {

struct Widths {
  double q_latent = 0;  // q_lora_rank; 0: queries projected from the hidden states
  double kv_latent = 0;
  double rope = 0;
  double qk = 0;     // a query or key head: nope + rope
  double kv_up = 0;  // a head's share of the kv up projection: nope + v
};

Widths widths(const config::MlaSpec& m) {
  return {.q_latent = static_cast<double>(m.q_lora_rank),
          .kv_latent = static_cast<double>(m.kv_lora_rank),
          .rope = static_cast<double>(m.qk_rope_head_dim),
          .qk = static_cast<double>(m.qk_nope_head_dim + m.qk_rope_head_dim),
          .kv_up = static_cast<double>(m.qk_nope_head_dim + m.v_head_dim)};
}

// What the up projections read, per token: the query latent (or the hidden states), the key-value
// latent and the shared rotary key; all-gathered over the tensor group with sequence parallelism.
double gathered_width(const Widths& w, double h) {
  return (w.q_latent > 0 ? w.q_latent : h) + w.kv_latent + w.rope;
}

}  // namespace

void mla_projections_forward(std::vector<LayerOp>& ops, const config::MlaSpec& mla, const MlaShard& sh) {
  const Widths w = widths(mla);
  const double te = sh.tokens_elementwise;
  const double a = sh.a;
  const bool q_latent = w.q_latent > 0;
  // The duplicated down projections (without a query latent, the query projection and kv_down), on the
  // rank's own tokens; each casts its input (no norm fused).
  linear::input_cast_forward(ops, {"mla_down_input_fp8_cast", "mla_down_input_fp8_amax"}, te * sh.h * 2,
                             false, sh.fp8);
  if (q_latent) {
    linear::weight_cast_forward(ops, {"q_down_weight_fp8_cast", "q_down_weight_fp8_amax"}, sh.h * w.q_latent,
                                sh.fp8);
    ops.push_back(linear::gemm("q_down_projection", te, w.q_latent, sh.h, a));
  }
  linear::weight_cast_forward(ops, {"kv_down_weight_fp8_cast", "kv_down_weight_fp8_amax"},
                              sh.h * (w.kv_latent + w.rope), sh.fp8);
  ops.push_back(linear::gemm("kv_down_projection", te, w.kv_latent + w.rope, sh.h, a));
  const std::size_t up_begin = ops.size();
  // The latent norms fused into the up projections (TELayerNormColumnParallelLinear): on the rank's own
  // tokens, writing the FP8 input themselves, then gathered.
  if (q_latent) ops.push_back(elementwise::norm_forward("q_latent_norm", sh.kernels, te * w.q_latent));
  ops.push_back(elementwise::norm_forward("kv_latent_norm", sh.kernels, te * w.kv_latent));
  if (sh.sp) {
    ops.push_back(comm_op("mla_latent_all_gather", CommRole::tensor_all_gather,
                          sh.tokens * gathered_width(w, sh.h) * a, GemmOverlap::with_next));
  }
  linear::input_cast_forward(ops, {"mla_up_input_fp8_cast", "mla_up_input_fp8_amax"},
                             te * (w.q_latent + w.kv_latent), true, sh.fp8);
  const double q_in = q_latent ? w.q_latent : sh.h;
  linear::weight_cast_forward(ops, {"q_up_weight_fp8_cast", "q_up_weight_fp8_amax"}, q_in * sh.heads * w.qk,
                              sh.fp8);
  ops.push_back(
      linear::gemm(q_latent ? "q_up_projection" : "q_projection", sh.tokens, sh.heads * w.qk, q_in, a));
  linear::weight_cast_forward(ops, {"kv_up_weight_fp8_cast", "kv_up_weight_fp8_amax"},
                              w.kv_latent * sh.heads * w.kv_up, sh.fp8);
  ops.push_back(linear::gemm("kv_up_projection", sh.tokens, sh.heads * w.kv_up, w.kv_latent, a));
  // The queries' rotary parts and the key's shared one.
  ops.push_back(elementwise::rotary("rotary_embedding", sh.kernels, sh.tokens * (sh.heads + 1) * w.rope));
  // What selective recompute's 'mla_up_proj' reruns: from the latent norms on, but the gather.
  for (std::size_t k = up_begin; k < ops.size(); ++k) {
    if (ops[k].role == CommRole::none) ops[k].recompute_tag = RecomputeTag::mla_up_proj;
  }
}

void mla_projections_backward(std::vector<LayerOp>& ops, const config::MlaSpec& mla, const MlaShard& sh) {
  const Widths w = widths(mla);
  const double te = sh.tokens_elementwise;
  const double a = sh.a;
  const bool q_latent = w.q_latent > 0;
  const double q_in = q_latent ? w.q_latent : sh.h;
  ops.push_back(elementwise::rotary("rotary_embedding_bwd", sh.kernels, sh.tokens * (sh.heads + 1) * w.rope));
  linear::grad_cast_backward(ops, {"mla_up_grad_fp8_cast", "mla_up_grad_fp8_amax"},
                             sh.tokens * sh.heads * (w.qk + w.kv_up), sh.fp8);
  linear::input_transpose_backward(ops, "mla_up_input_fp8_transpose", te * (w.q_latent + w.kv_latent),
                                   sh.fp8);
  // The up projections are column-parallel (transformer.cpp, column_parallel_backward): with sequence
  // parallelism their gathered inputs are re-gathered for the weight gradients and the latents'
  // gradients reduce-scattered, beside the GEMMs with backward overlap; otherwise all-reduced.
  // The rotary key's gradient is reduced with the latents'; only the up projections' inputs are re-gathered.
  const double latent_bytes = sh.tokens * gathered_width(w, sh.h) * a;
  const double regather_bytes = sh.tokens * (q_in + w.kv_latent) * a;
  const bool split = sh.t > 1;
  const GemmOverlap beside = sh.backward_overlap ? GemmOverlap::beside_next : GemmOverlap::none;
  const LayerOp reduction =
      comm_op("mla_latent_grad_reduce", sh.sp ? CommRole::tensor_reduce_scatter : CommRole::tensor_all_reduce,
              latent_bytes, beside);
  if (split && sh.sp) {
    ops.push_back(
        weight_grad_op(comm_op("mla_latent_regather", CommRole::tensor_all_gather, regather_bytes, beside)));
  }
  ops.push_back(linear::gemm(q_latent ? "q_up_projection_dgrad" : "q_projection_dgrad", sh.tokens, q_in,
                             sh.heads * w.qk, a));
  ops.push_back(linear::gemm("kv_up_projection_dgrad", sh.tokens, w.kv_latent, sh.heads * w.kv_up, a));
  if (split && sh.backward_overlap) ops.push_back(reduction);
  ops.push_back(weight_grad_op(linear::gemm(q_latent ? "q_up_projection_wgrad" : "q_projection_wgrad", q_in,
                                            sh.heads * w.qk, sh.tokens, a)));
  ops.push_back(
      weight_grad_op(linear::gemm("kv_up_projection_wgrad", w.kv_latent, sh.heads * w.kv_up, sh.tokens, a)));
  if (split && !sh.backward_overlap) ops.push_back(reduction);
  if (q_latent) ops.push_back(elementwise::norm_backward("q_latent_norm_bwd", sh.kernels, te * w.q_latent));
  ops.push_back(elementwise::norm_backward("kv_latent_norm_bwd", sh.kernels, te * w.kv_latent));
  // The duplicated down projections on the rank's own tokens: no collective; the two gradients of their
  // input (without a query latent, the query projection's, reduced above) are summed by autograd.
  linear::grad_cast_backward(ops, {"mla_down_grad_fp8_cast", "mla_down_grad_fp8_amax"},
                             te * ((q_latent ? w.q_latent : 0) + w.kv_latent + w.rope), sh.fp8);
  if (q_latent) ops.push_back(linear::gemm("q_down_projection_dgrad", te, sh.h, w.q_latent, a));
  ops.push_back(linear::gemm("kv_down_projection_dgrad", te, sh.h, w.kv_latent + w.rope, a));
  if (q_latent) {
    ops.push_back(weight_grad_op(linear::gemm("q_down_projection_wgrad", sh.h, w.q_latent, te, a)));
  }
  ops.push_back(weight_grad_op(linear::gemm("kv_down_projection_wgrad", sh.h, w.kv_latent + w.rope, te, a)));
  ops.push_back(memory_op("mla_down_grad_sum", 3 * a * te * sh.h));
}

std::vector<double> mla_parameter_tensors(const config::MlaSpec& mla, double h, double heads,
                                          int norm_tensors) {
  const Widths w = widths(mla);
  std::vector<double> out;
  const auto norm = [&](double width) {
    for (int i = 0; i < norm_tensors; ++i) out.push_back(width);
  };
  if (w.q_latent > 0) {
    out.push_back(h * w.q_latent);
    norm(w.q_latent);
    out.push_back(w.q_latent * heads * w.qk);
  } else {
    out.push_back(h * heads * w.qk);
  }
  out.push_back(h * (w.kv_latent + w.rope));
  norm(w.kv_latent);
  out.push_back(w.kv_latent * heads * w.kv_up);
  return out;
}

std::vector<bool> mla_replicated_tensors(const config::MlaSpec& mla, int norm_tensors) {
  std::vector<bool> out;
  const auto norm = [&] { out.insert(out.end(), static_cast<std::size_t>(norm_tensors), true); };
  if (mla.q_lora_rank > 0) {
    out.push_back(true);  // q_down
    norm();
    out.push_back(false);  // q_up
  } else {
    out.push_back(false);  // q
  }
  out.push_back(true);  // kv_down
  norm();
  out.push_back(false);  // kv_up
  return out;
}

double mla_projection_weights(const config::MlaSpec& mla, double h, double heads) {
  const Widths w = widths(mla);
  const double q = w.q_latent > 0 ? h * w.q_latent + w.q_latent * heads * w.qk : h * heads * w.qk;
  return q + h * (w.kv_latent + w.rope) + w.kv_latent * heads * w.kv_up;
}

int mla_weight_tensors(const config::MlaSpec& mla) { return mla.q_lora_rank > 0 ? 4 : 3; }

}  // namespace dtsim::models
