#include "models/transformer/moe.hpp"

#include <algorithm>
#include <numeric>
#include <vector>

namespace dtsim::models {

namespace moe_ops {

struct Sizes {
  double experts = 0;
  double local_experts = 0;  // on this rank
  double copies = 0;         // token copies this rank routes: T_r k
  double busiest = 0;        // R: token copies the busiest rank computes
  double f = 0;              // expert FFN width on this rank
  double up = 0;             // its up projection's width (gate and up for SwiGLU)
  double exchange = 0;       // bytes of each all-to-all, the busiest rank's
};

Sizes sizes_of(const config::MoeSpec& moe, const MoeShard& sh) {
  Sizes z;
  z.experts = static_cast<double>(moe.experts);
  z.local_experts = z.experts / sh.expert;
  const double k = static_cast<double>(moe.top_k);
  z.copies = sh.routed * k;
  z.busiest = sh.routed * k * sh.expert_tensor * moe.busiest_factor();
  z.f = static_cast<double>(moe.expert_ffn_hidden_size) / sh.expert_tensor;
  z.up = sh.swiglu ? 2 * z.f : z.f;
  z.exchange = z.copies * sh.h * sh.a * moe.busiest_factor();
  return z;
}

// A grouped GEMM of the local experts (batch: one problem per expert), on the FP8 curve in an FP8 run.
LayerOp expert_gemm(std::string_view name, double m, double n, double k, const MoeShard& sh, double experts) {
  LayerOp op = gemm_op(name, m, n, k, sh.a, experts);
  op.compute.linear_layer = sh.fp8.on;
  return op;
}

}  // namespace moe_ops

using moe_ops::expert_gemm;

void moe_forward(std::vector<LayerOp>& fw, const config::MoeSpec& moe, const MoeShard& sh) {
  const moe_ops::Sizes z = moe_ops::sizes_of(moe, sh);
  const double per_expert = z.busiest / z.local_experts;
  fw.push_back(gemm_op("moe_router", sh.routed, z.experts, sh.h, sh.a));
  fw.push_back(memory_op("moe_router_topk", 8 * sh.routed * z.experts));
  if (!moe.capacity_factor) {  // dropless: the token counts decide the exchanges' sizes
    if (sh.expert > 1 || sh.expert_tensor > 1) {
      const double count_bytes = sh.expert * sh.expert_tensor * z.experts * 8;
      const CommRole group = sh.expert > 1 ? CommRole::expert_all_gather : CommRole::tensor_all_gather;
      fw.push_back(comm_op("moe_token_count_all_gather", group, count_bytes));
    }
  }
  fw.push_back(memory_op("moe_permute", 2 * z.copies * sh.h * sh.a));
  if (!moe.capacity_factor) {
    LayerOp sync = memory_op("moe_token_count_sync", 0);
    sync.compute.kernels = 0;
    sync.host_waits = true;
    fw.push_back(sync);
  }
  if (sh.expert > 1)
    fw.push_back(comm_op("moe_dispatch_all_to_all", CommRole::expert_all_to_all, z.exchange));
  if (sh.expert_tensor > 1)
    fw.push_back(comm_op("moe_tp_all_gather", CommRole::tensor_all_gather, z.busiest * sh.h * sh.a));
  linear::input_cast_forward(fw, {"moe_expert_up_input_fp8_cast", "moe_expert_up_input_fp8_amax"},
                             z.busiest * sh.h, false, sh.fp8);
  fw.push_back(expert_gemm("moe_expert_up", per_expert, z.up, sh.h, sh, z.local_experts));
  fw.push_back(elementwise::activation_forward(sh.kernels, z.busiest * z.f));
  fw.back().recompute_tag = RecomputeTag::moe_act;
  linear::input_cast_forward(fw, {"moe_expert_down_input_fp8_cast", "moe_expert_down_input_fp8_amax"},
                             z.busiest * z.f, false, sh.fp8);
  fw.push_back(expert_gemm("moe_expert_down", per_expert, sh.h, z.f, sh, z.local_experts));
  if (sh.expert_tensor > 1) {
    fw.push_back(comm_op("moe_tp_reduce_scatter", CommRole::tensor_reduce_scatter, z.busiest * sh.h * sh.a));
  }
  if (sh.expert > 1) fw.push_back(comm_op("moe_combine_all_to_all", CommRole::expert_all_to_all, z.exchange));
  fw.push_back(memory_op("moe_unpermute", (2 * z.copies + sh.routed) * sh.h * sh.a));
}

void moe_backward(std::vector<LayerOp>& bw, const config::MoeSpec& moe, const MoeShard& sh) {
  const moe_ops::Sizes z = moe_ops::sizes_of(moe, sh);
  const double per_expert = z.busiest / z.local_experts;
  bw.push_back(memory_op("moe_unpermute_bwd", (2 * z.copies + sh.routed) * sh.h * sh.a));
  if (sh.expert > 1)
    bw.push_back(comm_op("moe_combine_grad_all_to_all", CommRole::expert_all_to_all, z.exchange));
  if (sh.expert_tensor > 1) {
    bw.push_back(comm_op("moe_tp_grad_all_gather", CommRole::tensor_all_gather, z.busiest * sh.h * sh.a));
  }
  linear::grad_cast_backward(bw, {"moe_expert_down_grad_fp8_cast", "moe_expert_down_grad_fp8_amax"},
                             z.busiest * sh.h, sh.fp8);
  bw.push_back(expert_gemm("moe_expert_down_dgrad", per_expert, z.f, sh.h, sh, z.local_experts));
  bw.push_back(
      weight_grad_op(expert_gemm("moe_expert_down_wgrad", z.f, sh.h, per_expert, sh, z.local_experts)));
  bw.push_back(elementwise::activation_backward(sh.kernels, z.busiest * z.f));
  linear::grad_cast_backward(bw, {"moe_expert_up_grad_fp8_cast", "moe_expert_up_grad_fp8_amax"},
                             z.busiest * z.up, sh.fp8);
  bw.push_back(expert_gemm("moe_expert_up_dgrad", per_expert, sh.h, z.up, sh, z.local_experts));
  bw.push_back(
      weight_grad_op(expert_gemm("moe_expert_up_wgrad", sh.h, z.up, per_expert, sh, z.local_experts)));
  if (sh.expert_tensor > 1) {
    bw.push_back(
        comm_op("moe_tp_grad_reduce_scatter", CommRole::tensor_reduce_scatter, z.busiest * sh.h * sh.a));
  }
  if (sh.expert > 1)
    bw.push_back(comm_op("moe_dispatch_grad_all_to_all", CommRole::expert_all_to_all, z.exchange));
  bw.push_back(memory_op("moe_permute_bwd", 2 * z.copies * sh.h * sh.a));
  bw.push_back(memory_op("moe_router_topk_bwd", 8 * sh.routed * z.experts));
  bw.push_back(gemm_op("moe_router_dgrad", sh.routed, sh.h, z.experts, sh.a));
  bw.push_back(weight_grad_op(gemm_op("moe_router_wgrad", sh.h, z.experts, sh.routed, sh.a)));
}

namespace {

// The mean number of `blocks` equal runs of consecutive experts (GPUs or nodes) a token's k experts fall
// on, for an expert group over `nodes` nodes (node_aware_copies, gpu_copies).
double distinct_blocks(const config::MoeSpec& moe, std::int64_t blocks, std::int64_t nodes) {
  const std::int64_t e = moe.experts;
  if (moe.routing == config::MoeRouting::round_robin) {
    // Token t starts at t k mod E: every multiple of g = gcd(E, k) once per E / g tokens. A run of k from
    // start s covers the blocks floor(x B / E) of x = s .. s + k - 1 read past E (each B blocks further on
    // the same blocks again): at most B distinct.
    const std::int64_t g = std::gcd(e, moe.top_k);
    double sum = 0.0;
    for (std::int64_t start = 0; start < e; start += g) {
      const std::int64_t first = start * blocks / e;
      const std::int64_t last = (start + moe.top_k - 1) * blocks / e;
      sum += static_cast<double>(std::min(blocks, last - first + 1));
    }
    return sum / static_cast<double>(e / g);
  }
  const double n = static_cast<double>(nodes);
  const double m = static_cast<double>(std::min(moe.max_nodes_per_token.value_or(nodes), nodes));
  const double per_node = static_cast<double>(e) / n;
  const double per_block = static_cast<double>(e) / static_cast<double>(blocks);
  const double eligible = per_node * m;  // the experts of the chosen nodes
  // C(eligible - per_block, k) / C(eligible, k): none of the k experts in a given block of a chosen node.
  double missed = 1.0;
  for (std::int64_t i = 0; i < moe.top_k; ++i) {
    const double d = static_cast<double>(i);
    if (eligible - d <= 0.0) {  // fewer experts on the chosen nodes than k: each of them gets some
      missed = 0.0;
      break;
    }
    missed *= std::max(0.0, eligible - per_block - d) / (eligible - d);
  }
  const double hit = m / n * (1.0 - missed);
  return static_cast<double>(blocks) * hit;
}

}  // namespace

double node_aware_copies(const config::MoeSpec& moe, std::int64_t nodes) {
  if (nodes <= 1 || moe.experts <= 0 || moe.top_k <= 0) return 1.0;
  return std::min(1.0, distinct_blocks(moe, nodes, nodes) / static_cast<double>(moe.top_k));
}

double gpu_copies(const config::MoeSpec& moe, std::int64_t gpus, std::int64_t nodes) {
  if (gpus <= 1 || moe.experts <= 0 || moe.top_k <= 0) return 1.0;
  return std::min(
      1.0, distinct_blocks(moe, gpus, std::max<std::int64_t>(nodes, 1)) / static_cast<double>(moe.top_k));
}

double routed_expert_parameters(const config::TransformerSpec& m) {
  if (!m.moe) return 0.0;
  const double h = static_cast<double>(m.hidden_size);
  const double f = static_cast<double>(m.moe->expert_ffn_hidden_size);
  const double up = m.mlp == config::MlpKind::swiglu ? 2 * f : f;
  return static_cast<double>(m.moe->experts) * (h * up + f * h);
}

double active_routed_parameters(const config::TransformerSpec& m) {
  if (!m.moe) return 0.0;
  return routed_expert_parameters(m) * static_cast<double>(m.moe->top_k) /
         static_cast<double>(m.moe->experts);
}

}  // namespace dtsim::models
