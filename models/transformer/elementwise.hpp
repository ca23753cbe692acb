// The elementwise work of a transformer layer (norms, rotary embeddings, MLP activation, residual
// additions, attention-output layout) as memory-bound cost declarations, for the two ways a training
// stack runs it (config::ElementwiseKernels). Bytes are HBM bytes read plus written; `a` is bytes per
// activation element (2 for 16-bit training); E is the elements of the tensor the op works on.
//
// fused (Megatron-Core with Transformer Engine, torch.compile): one kernel per op.
//   norm           forward 2aE (read the input, write the output), backward 3aE
//   rotary         forward 2aX on the rotated queries and keys (X elements), backward 2aX
//   swiglu, gelu   forward 3aF and 2aF on the F-element intermediates, backward 5aF and 3aF
//   residual       forward (3a + 1)E (bias-dropout-add with its 1-byte mask), backward (2a + 1)E
//
// eager (PyTorch without compilation, one kernel per operation; torchtitan's Llama of 2024,
// torchtitan/models/norms.py and models/llama/model.py):
//   RMSNorm        x.float(), pow(2), mean, + eps, rsqrt, x * rsqrt, type_as(x), * weight: 8 kernels,
//                  forward (24 + 4a)E: (a+4) + 8 + 4 + 8 + (4+a) + 2a, the scalar ops negligible;
//                  backward 12 kernels, (8a + 68)E: the weight product's two gradients 6a, the cast
//                  back a + 4, the x * rsqrt product's two gradients 8 + 16, mean's expansion 4, pow's
//                  gradient 2 * x * g 20, summing the two gradients of x 12, the cast to 16 bits 4 + a.
//                  LayerNorm has one native kernel each way, as fused.
//   rotary         per tensor float(), complex product, type_as: 3 kernels, (16 + 2a)X each way.
//   swiglu         silu, then the product with the up projection: 2 kernels, forward 5aF, backward
//                  3 kernels 9aF (the product's two gradients 3aF each, silu's 3aF); the gate and up
//                  projections are two linears whose input gradients are summed: 1 kernel, 3aE.
//                  gelu: one kernel each way, as fused.
//   residual       the addition, 3aE, 1 kernel (no dropout in Llama-style models; GPT-style: dropout
//                  and addition, 2 kernels, (5a + 1)E); backward: autograd sums the two gradients of
//                  the block input, 3aE (GPT-style: with dropout's backward, (5a + 1)E, 2 kernels).
//   attention out  output.transpose(1, 2).contiguous() before the output projection: 2a per element
//                  each way (the attention backward takes its gradient contiguous), 1 kernel.
//   repeat_kv      with grouped-query attention, K and V are repeated to every query head before the
//                  attention kernel: forward a(kv + heads)d per token for each, backward the sum back.
#pragma once

#include <string_view>
#include <vector>

#include "models/transformer/transformer.hpp"

namespace dtsim::models::elementwise {

struct Kernels {
  bool eager = false;
  bool rms_norm = false;  // RMSNorm and SwiGLU (Llama-style), else LayerNorm and GELU with dropout
  double a = 2;           // bytes per activation element
};

LayerOp norm_forward(std::string_view name, const Kernels& k, double elements);
LayerOp norm_backward(std::string_view name, const Kernels& k, double elements);
LayerOp rotary(std::string_view name, const Kernels& k, double rotated_elements);  // either way
LayerOp activation_forward(const Kernels& k, double intermediate_elements);
LayerOp activation_backward(const Kernels& k, double intermediate_elements);
LayerOp residual_forward(std::string_view name, const Kernels& k, double elements);
LayerOp residual_backward(std::string_view name, const Kernels& k, double elements);

// Ops only eager stacks run (nothing is appended for fused kernels), each the same bytes forward and
// backward (`name` tells which): K and V repeated to every query head before the attention kernel
// (grouped-query attention) and summed back; the attention output's layout copy; and, backward only,
// the two up-projection input gradients summed.
void repeat_kv(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double tokens,
               double heads, double kv_heads, double head_dim);
void attention_output_layout(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k,
                             double elements);
void up_projection_grad_sum(std::vector<LayerOp>& ops, const Kernels& k, double elements);

}  // namespace dtsim::models::elementwise
