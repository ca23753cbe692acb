// The routed experts of a mixture-of-experts layer (config::MoeSpec) as the ops one rank runs, per
// micro-batch, with expert parallelism over `expert` ranks and the experts' weights split over e_t
// ranks: the tensor-parallel group as the attention's are (Megatron-Core's default expert tensor
// parallelism), or none (e_t = 1 with tensor > 1: MoE parallel folding, --expert-tensor-parallel-size 1,
// moe/README.md "MoE Parallel Folding": the expert group then spans tensor ranks, parallel/mesh.hpp).
//
// Sources: the token dispatcher of Megatron-Core (megatron/core/transformer/moe/token_dispatcher.py,
// MoEAlltoAllTokenDispatcher; moe/README.md): each rank routes its own tokens (its sequence shard under
// sequence parallelism), permutes the top_k copies of each token by expert, exchanges them with the
// expert-parallel group in one all-to-all, all-gathers them over the tensor-parallel group, runs its
// local experts' GEMMs as grouped GEMMs (moe/experts.py, GroupedMLP), and undoes the path: reduce-scatter
// over the tensor group, the combining all-to-all, the unpermutation weighted by the router's
// probabilities. The router is a linear layer of hidden x experts followed by a softmax and a top-k
// (moe/router.py). Fedus et al. 2021 (Switch Transformers, arXiv 2101.03961, Sec. 2.2) and Lepikhin et al.
// 2020 (GShard, arXiv 2006.16668) for the capacity factor.
//
// Per micro-batch, with T the tokens of the tensor-parallel group (micro-batch x sequence / context),
// T_r the tokens this rank routes (T / tensor with sequence parallelism, else T), h the hidden size,
// E the experts, k top_k, a bytes per activation element, f the expert's FFN width on this rank
// (expert_ffn_hidden_size / e_t), and R = T_r k e_t x busiest_factor the token copies the busiest
// expert-parallel rank computes (each of its E / expert local experts gets R / (E / expert); T k
// when e_t is the tensor degree):
//   forward   router GEMM [T_r x h] x [h x E]; softmax and top-k over T_r x E FP32 scores (read and
//             written: 8 bytes each); permute 2 T_r k h a bytes; dispatch all-to-all of T_r k h a bytes
//             (x busiest_factor: the busiest rank's share) over the expert group; with e_t > 1 an
//             all-gather of R h a over the tensor group; grouped GEMMs up [R x h] x [h x f (2f SwiGLU)],
//             the activation, down [R x f] x [f x h]; the reduce-scatter of R h a; the combining
//             all-to-all; unpermute and the weighted sum, 2 T_r k h a + T_r h a bytes.
//   backward  the same exchanges in reverse order, each GEMM's data and weight gradients, the
//             activation's backward, the permutations' backward and the router's two gradient GEMMs.
// Without expert parallelism (expert 1) there is no all-to-all: Megatron-Core's all_to_all returns its
// input on a group of one (tensor_parallel/mappings.py).
// Dropless (no capacity_factor), the exchanges' sizes come from the token counts, which the host must
// read (MoEAlltoAllTokenDispatcher.preprocess and _maybe_dtoh_and_synchronize): with expert > 1 (or
// e_t > 1) each rank's count per expert, E x 8 bytes, is all-gathered over the expert group (the
// tensor group when expert is 1; Megatron-Core gathers over e_t x expert, whose e_t part, inside
// the node, is not counted), copied to the host, and the host synchronizes before it issues the
// dispatch all-to-all ("before_ep_alltoall"; "before_finish" without expert or tensor parallelism):
// forward, after the permutation, a zero-time op the host waits on (LayerOp::host_waits). The host
// then has lost its lead over the GPU, so the kernels after the exchange wait for their issue where
// they are short. Padded to capacity, every size is known beforehand: no exchange, no wait.
// With parallelism.moe_dispatcher "deepep", the four exchanges are DeepEP's normal kernels
// (deepseek-ai/DeepEP, README "Normal kernels with NVLink and RDMA forwarding"; DeepSeek-AI 2024, arXiv
// 2412.19437, Sec. 3.2.2): a token bound for experts on another node crosses the fabric once to that node,
// to the GPU of the sender's local index, which forwards it over NVLink to the GPUs of its experts there;
// the combine returns the same way, reduced at the forwarding GPU. The bytes on the fabric are those of
// the all-to-all times node_aware_copies() (graph::CommOp::node_aware); the forwarding adds NVLink
// traffic. Inside the node a token goes once to each GPU holding some of its experts: the NVLink bytes
// times gpu_copies() (graph::CommOp::gpu_copies), on one node too. Its kernels' SMs, its FP8 dispatch and its
// low-latency (inference) kernels are not modelled. In an FP8 run (precision "fp8", Transformer Engine's
// delayed scaling: Megatron-Core's TEGroupedMLP runs the experts as te.GroupedLinear, whose grouped GEMMs
// take FP8 operands, under --fp8-format), the routed experts' four GEMMs run at the FP8 curve
// (ComputeOp::linear_layer) with linear.hpp's casts around them: forward the permuted tokens (R x h) and the
// activation's output (R x f) each cast with its transpose (neither is a norm's output), backward the output
// gradients of the down (R x h) and up projections (R x 2f for SwiGLU) cast with theirs; the experts' weight
// copies are cast once per iteration (cached, not costed, as for the dense layers). The router, the
// permutations, the exchanges (in 16 bits: DeepEP's FP8 dispatch is not modelled) and the activation stay as
// they are. The tensorwise recipe (torchao) is refused with experts: torchao.float8 converts nn.Linear
// modules, and its grouped-GEMM training path (rowwise and MX scaling) is another recipe. Not costed:
// auxiliary-loss kernels and the all-gather style dispatcher. The overlap of the exchanges with another
// micro-batch's compute is the schedule's (combined 1F1B: parallel/pipeline_schedule.hpp), not the layer's.
#pragma once

#include <vector>

#include "config/scenario.hpp"
#include "models/transformer/elementwise.hpp"
#include "models/transformer/linear.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::models {

// One rank's share of a mixture-of-experts layer.
struct MoeShard {
  double tokens = 0;  // T above
  double routed = 0;  // T_r above
  double h = 0;
  double a = 2;
  double expert_tensor = 1;  // e_t below: the tensor degree, or 1 (folded)
  double expert = 1;
  bool swiglu = true;
  elementwise::Kernels kernels;
  linear::Fp8Casts fp8;  // an FP8 run's casts around the expert GEMMs (delayed scaling only, see above)
};

void moe_forward(std::vector<LayerOp>& fw, const config::MoeSpec& moe, const MoeShard& shard);
void moe_backward(std::vector<LayerOp>& bw, const config::MoeSpec& moe, const MoeShard& shard);

// The fraction of an all-to-all's off-node copies that a node-aware dispatcher sends over the fabric, for
// an expert group over `nodes` nodes holding the experts evenly. A token's k copies go to k distinct experts
// drawn evenly (among the experts of M chosen nodes with node-limited routing, MoeSpec::max_nodes_per_token);
// the dispatcher sends it once to each node among them. A given node holds E / N experts and is hit with
// probability q = (M / N) (1 - C(E M / N - E / N, k) / C(E M / N, k)) (M = N without a limit); the
// all-to-all sends k (N - 1) / N copies off the node, the node-aware one (N - 1) q:
//   node_aware_copies = N q / k.
// With N = 1 nothing leaves the node: 1. With round_robin routing (MoeSpec::routing) a token's k experts
// are consecutive: the mean number of nodes they fall on, over the tokens of one period (E / gcd(E, k)),
// over k.
double node_aware_copies(const config::MoeSpec& moe, std::int64_t nodes);
// The fraction of an all-to-all's copies that DeepEP sends, for an expert group of `gpus` GPUs over
// `nodes` nodes holding the experts evenly: it sends a token once to each GPU that holds some of its
// experts, with the list of them (deepseek-ai/DeepEP, csrc/kernels/intranode.cu and internode.cu:
// is_token_in_rank), where the all-to-all sends one copy per expert. As above with GPUs for nodes: a
// given GPU holds E / G experts and is hit with probability (M / N) (1 - C(E M / N - E / G, k) /
// C(E M / N, k)); gpu_copies = G q / k (round_robin: the mean number of GPUs the k consecutive experts
// fall on, over k). Qwen3-30B-A3B on 8 GPUs (E 128, k 8): 5.34 of 8 copies uniform, 1 round robin.
double gpu_copies(const config::MoeSpec& moe, std::int64_t gpus, std::int64_t nodes);

// The routed experts' weights of one layer, all experts, whole model: E x (h x (2f SwiGLU | f) + f x h)
// for f = expert_ffn_hidden_size (no biases); the router's h x E weight is not among them (it is
// replicated like the attention's weights).
double routed_expert_parameters(const config::TransformerSpec& model);
// Routed experts' parameters per token and layer that compute (k of E): for model FLOPs.
double active_routed_parameters(const config::TransformerSpec& model);

}  // namespace dtsim::models
