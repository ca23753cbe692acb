// The linear layers of a transformer (QKV, attention output, MLP up and down projections): their GEMMs
// and, in an FP8 run, the casts an FP8 recipe runs around them (config::Fp8Recipe).
//
// In an FP8 run only these GEMMs run in FP8 (ComputeOp::linear_layer, at the GPU's FP8 curve:
// compute/compute_model.hpp); attention, the logits, norms, activations, the loss and the optimizer
// stay in BF16, as in Transformer Engine, whose fp8_autocast converts only its own modules (the
// attention core in FP8 is a separate option, fp8_dpa, off by default; Megatron-Core's output layer is
// not a Transformer Engine module), and in torchao.float8, which swaps nn.Linear modules only. Around
// each FP8 GEMM, per micro-batch, E elements of the operand:
//
// delayed (Transformer Engine's DelayedScaling, as Megatron-Core uses it: TELayerNormColumnParallelLinear
// for QKV and the up projection, TERowParallelLinear for the attention output and the down projection):
//   forward   the input is cast to FP8 with its transpose for the weight gradient: after a norm the
//             norm writes FP8 itself (layernorm_fwd_fp8) and the transpose waits for the backward
//             pass (fp8_transpose: 2E bytes, read and write one byte per element); otherwise one fused
//             cast-transpose kernel (fp8_cast_transpose_fused: 4E bytes, two to read, one and one to
//             write);
//   backward  the output gradient is cast to FP8 E5M2 with its transpose and the bias gradient
//             (fp8_cast_transpose_bgrad_fused: 4E bytes, one kernel).
//   Not costed: the FP8 copies of the weights (cast and transposed once per iteration, not per
//   micro-batch: Megatron-Core passes is_first_microbatch so Transformer Engine caches them), the amax
//   history and scale updates (a few kernels per iteration) and the amax reductions across the tensor-
//   and data-parallel groups (a few bytes each).
// tensorwise (current per-tensor scaling: torchao.float8's default recipe, compiled, as torchtitan runs
//   it; pytorch/torchtitan docs/float8.md: "tensor-wise scaling with dynamic scales", with
//   --training.compile "required for competitive performance: use torch.compile to fuse the float8
//   scaling/casting kernels"): the scale of a tensor is known only once its amax is read, so every
//   operand, the input, the weight (every micro-batch: no cache) and the output gradient, costs one
//   amax reduction (2E bytes, memory class amax) and one fused scale-cast-transpose kernel (4E bytes);
//   no norm writes FP8 and no transpose waits for the backward pass. Measured on one H100 by this
//   project (calibration/torch/fp8_step_probe.py, tests/validation/h100_fp8_step_pytorch.json): 12 amax
//   and 12 cast kernels per layer, as costed here.
// The fused casts run at the memory class fp8_cast_transpose (core/memory_class.hpp). Casts in eager
// PyTorch, each step its own kernel (abs, max, widening cast, multiply, clamp, narrowing cast,
// transposed copies), cost 1.7-1.8x the BF16 step on the same measurement and are not modelled: no
// stack runs them (torchao's own documentation asks for torch.compile).
#pragma once

#include <string_view>
#include <vector>

#include "models/transformer/transformer.hpp"

namespace dtsim::models::linear {

// A linear layer's GEMM: gemm_op marked as one that runs in FP8 in an FP8 run.
LayerOp gemm(std::string_view name, double m, double n, double k, double a);

// The FP8 casts of a run: none unless its precision is FP8.
struct Fp8Casts {
  bool on = false;
  config::Fp8Recipe recipe = config::Fp8Recipe::delayed;
};

// The names of a cast and of the amax read before it (static strings: LayerOp keeps views).
struct Fp8OpNames {
  std::string_view cast;
  std::string_view amax;
};

// The forward casts of a linear layer's input of `elements` elements; `after_norm`: a norm writes that
// input (QKV and the up projection), which under delayed scaling writes FP8 itself.
void input_cast_forward(std::vector<LayerOp>& ops, Fp8OpNames names, double elements, bool after_norm,
                        Fp8Casts casts);
// The casts of a linear layer's weight (`elements` elements), each micro-batch (tensorwise only).
void weight_cast_forward(std::vector<LayerOp>& ops, Fp8OpNames names, double elements, Fp8Casts casts);
// Under delayed scaling, the transpose in the backward pass of an input its norm wrote in FP8.
void input_transpose_backward(std::vector<LayerOp>& ops, std::string_view name, double elements,
                              Fp8Casts casts);
// The cast of a linear layer's output gradient (`elements` elements) in the backward pass.
void grad_cast_backward(std::vector<LayerOp>& ops, Fp8OpNames names, double elements, Fp8Casts casts);

}  // namespace dtsim::models::linear
