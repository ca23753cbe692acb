// The elementwise work of a transformer layer (norms, rotary embeddings, MLP activation, residual
// additions, attention-output layout) as memory-bound cost declarations, for the ways a training
// stack runs it (config::ElementwiseKernels). Bytes are HBM bytes read plus written; `a` is bytes per
// activation element (2 for 16-bit training); E is the elements of the tensor the op works on. Each op
// carries its memory class (core/memory_class.hpp), whose measured rate the compute model uses: fused
// and scripted norms norm_forward / norm_backward, eager RMSNorm norm_eager_forward / _backward, the
// attention output's layout copy transpose, bias-gradient sums reduction, everything else streaming.
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
//   gelu (hf_eager) Hugging Face's NewGELUActivation (GPT-2's gelu_new), 0.5 x (1 + tanh(sqrt(2/pi) (x +
//                  0.044715 x^3))) in eager operations: 8 kernels forward, 18aF (six unary passes 2aF,
//                  two binary 3aF); backward 11 kernels, 28aF (three constant products 2aF each, pow's
//                  gradient 3x^2 g in three kernels 7aF, tanh's 3aF, the two sums of x's gradients 3aF
//                  each, the outer product's two gradients 3aF each): kernels as torch.profiler lists
//                  them (calibration/torch/kernel_class_probe.py, gelu_new_eager).
//   autocast       with an FP32 residual stream (autocast.hpp) the norms read and write FP32 (the eager
//                  RMSNorm's two casts are then no-ops: forward 24E in 6 kernels, backward 84E in 10),
//                  a residual addition reads the FP32 stream and the 16-bit branch and writes FP32,
//                  (8 + a)E (mixed_add; GPT-style with its dropout, (3a + 9)E in 2 kernels), and its
//                  backward sums the two FP32 gradients, 12E, and casts the branch's to 16 bits, (4 + a)E.
//   attention out  output.transpose(1, 2).contiguous() before the output projection: 2a per element
//                  each way (the attention backward takes its gradient contiguous), 1 kernel.
//   repeat_kv      with grouped-query attention, K and V are repeated to every query head before the
//                  attention kernel: forward a(kv + heads)d per token for each, backward the sum back.
//   bias grads     GPT-style linears (nn.Linear, addmm) sum their output gradient over the tokens for the
//                  bias gradient in a reduction of its own: aN for an N-element output, 1 kernel each.
//
// scripted (Megatron-LM of 2020-2022: megatron/model/transformer.py, megatron/mpu/layers.py,
// megatron/model/fused_bias_gelu.py, megatron/model/fused_layer_norm.py): apex's fused LayerNorm, one
// kernel forward, three backward (partial and final weight and bias gradients, input gradient:
// apex csrc/layer_norm_cuda_kernel.cu), 3aE backward at the norm_backward class's rate (which was
// measured on the fewest bytes, the input and its gradient read and the gradient written; the second
// read of x and dy for the weight gradients is in the rate); bias-GELU and bias-dropout-add fused by
// TorchScript, one kernel each way as fused; everything around them one PyTorch kernel per operation:
//   qkv bias       the fused QKV linear adds its bias after the GEMM (output = output + bias): 2aN.
//   bias grads     the bias gradient of each linear a reduction over the tokens (grad_output.sum(0) for
//                  the QKV bias; autograd's sum to the bias's shape after the fused bias-GELU and
//                  bias-dropout-add backward passes): aN, 1 kernel per linear.
//   residual sum   autograd sums the two gradients of each block's input (the residual path and the
//                  norm's): 3aE, 1 kernel, twice a layer.
//   attention      the context's permute(2, 0, 1, 3).contiguous() copy, 2a per element each way;
//                  backward, baddbmm's gradients of queries and keys multiplied by alpha = 1/sqrt(d) in
//                  a kernel each (PyTorch derivatives.yaml, maybe_multiply), 2a per element, and the
//                  split of the fused QKV output joined back (cat): 2a per element of the QKV output.
#pragma once

#include <string_view>
#include <vector>

#include "models/transformer/transformer.hpp"

namespace dtsim::models::elementwise {

struct Kernels {
  config::ElementwiseKernels style = config::ElementwiseKernels::fused;
  bool rms_norm = false;  // RMSNorm and SwiGLU (Llama-style), else LayerNorm and GELU with dropout and biases
  double a = 2;           // bytes per activation element
  bool autocast = false;  // FP32 residual stream (autocast.hpp): norms and residual additions in FP32
  bool eager() const {
    return style == config::ElementwiseKernels::eager || style == config::ElementwiseKernels::hf_eager;
  }
  bool hf() const { return style == config::ElementwiseKernels::hf_eager; }
  bool scripted() const { return style == config::ElementwiseKernels::scripted; }
};

LayerOp norm_forward(std::string_view name, const Kernels& k, double elements);
LayerOp norm_backward(std::string_view name, const Kernels& k, double elements);
LayerOp rotary(std::string_view name, const Kernels& k, double rotated_elements);  // either way
LayerOp activation_forward(const Kernels& k, double intermediate_elements);
LayerOp activation_backward(const Kernels& k, double intermediate_elements);
LayerOp residual_forward(std::string_view name, const Kernels& k, double elements);
LayerOp residual_backward(std::string_view name, const Kernels& k, double elements);

// Ops only eager or scripted stacks run (nothing is appended for fused kernels), each the same bytes
// forward and backward (`name` tells which): K and V repeated to every query head before the attention
// kernel (grouped-query attention, eager) and summed back; the attention output's layout copy (eager,
// scripted); and, backward only, the two up-projection input gradients summed (eager SwiGLU).
void repeat_kv(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double tokens,
               double heads, double kv_heads, double head_dim);
void attention_output_layout(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k,
                             double elements);
void up_projection_grad_sum(std::vector<LayerOp>& ops, const Kernels& k, double elements);

// The kernels of linears with biases (GPT-style layers) outside their GEMMs: the bias added after the
// QKV GEMM (scripted), and each bias gradient's reduction over the tokens (eager, scripted), for an
// output of `elements` elements.
void bias_add(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double elements);
void bias_grad(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double elements);
// Autograd's sum of a block input's two gradients (scripted; eager counts it in residual_backward).
void residual_grad_sum(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double elements);
// The unfused attention core's backward kernels beside its GEMMs (scripted): the queries' and keys'
// gradients scaled by alpha, and the QKV split joined back; `qk_elements` are the elements of the
// queries (as many as the keys without grouped-query attention), `qkv_elements` of the QKV output.
void attention_core_grad_extras(std::vector<LayerOp>& ops, const Kernels& k, double qk_elements,
                                double qkv_elements);

}  // namespace dtsim::models::elementwise
