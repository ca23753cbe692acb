#include "models/transformer/mtp.hpp"

#include "models/transformer/linear.hpp"

namespace dtsim::models {

LayerProgram mtp_projection_program(const TokenShard& sh) {
  LayerProgram p;
  const double te = sh.tokens_elementwise;
  const double a = sh.a;
  auto& fw = p.forward;
  fw.push_back(elementwise::norm_forward("mtp_hidden_norm", sh.kernels, te * sh.h));
  fw.push_back(elementwise::norm_forward("mtp_embedding_norm", sh.kernels, te * sh.h));
  // torch.cat of the two normalized halves: read and written once, 2h wide.
  fw.push_back(memory_op("mtp_concat", 2 * te * 2 * sh.h * a));
  if (sh.sp) {
    fw.push_back(comm_op("mtp_projection_all_gather", CommRole::tensor_all_gather, sh.tokens * 2 * sh.h * a,
                         GemmOverlap::with_next));
  }
  fw.push_back(linear::gemm("mtp_projection", sh.tokens, sh.h / sh.t, 2 * sh.h, a));
  // gather_from_tensor_model_parallel_region: the h / t output columns of every rank, whole on each.
  if (sh.t > 1)
    fw.push_back(comm_op("mtp_projection_output_gather", CommRole::tensor_all_gather, sh.tokens * sh.h * a));

  auto& bw = p.backward;
  // The backward of the sequence split is an all-gather of the gradient; that of the column gather a split.
  if (sh.sp)
    bw.push_back(comm_op("mtp_projection_grad_gather", CommRole::tensor_all_gather, sh.tokens * sh.h * a));
  LayerOp dgrad = linear::gemm("mtp_projection_dgrad", sh.tokens, 2 * sh.h, sh.h / sh.t, a);
  LayerOp wgrad = weight_grad_op(linear::gemm("mtp_projection_wgrad", 2 * sh.h, sh.h / sh.t, sh.tokens, a));
  if (sh.t > 1) {
    // A column-parallel linear's backward (transformer.cpp, column_parallel_backward) on its 2h-wide input.
    const double bytes = sh.tokens * 2 * sh.h * a;
    const GemmOverlap beside = sh.backward_overlap ? GemmOverlap::beside_next : GemmOverlap::none;
    const LayerOp reduction =
        comm_op("mtp_projection_grad_tp_reduce",
                sh.sp ? CommRole::tensor_reduce_scatter : CommRole::tensor_all_reduce, bytes, beside);
    if (sh.sp) {
      bw.push_back(weight_grad_op(
          comm_op("mtp_projection_input_regather", CommRole::tensor_all_gather, bytes, beside)));
    }
    bw.push_back(dgrad);
    if (sh.backward_overlap) bw.push_back(reduction);
    bw.push_back(wgrad);
    if (!sh.backward_overlap) bw.push_back(reduction);
  } else {
    bw.push_back(dgrad);
    bw.push_back(wgrad);
  }
  bw.push_back(elementwise::norm_backward("mtp_embedding_norm_bwd", sh.kernels, te * sh.h));
  bw.push_back(elementwise::norm_backward("mtp_hidden_norm_bwd", sh.kernels, te * sh.h));
  elementwise::residual_grad_sum(bw, "mtp_hidden_grad_sum", sh.kernels, te * sh.h);
  return p;
}

double mtp_projection_parameters(const config::TransformerSpec& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double norm = m.mlp == config::MlpKind::swiglu ? h : 2 * h;
  return 2 * h * h + 3 * norm;
}

}  // namespace dtsim::models
