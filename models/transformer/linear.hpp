// The linear layers of a transformer (QKV, attention output, MLP up and down projections): their GEMMs
// and, in an FP8 run, what Transformer Engine's FP8 recipe runs around them (delayed scaling, as
// Megatron-Core uses it: TELayerNormColumnParallelLinear for QKV and the up projection,
// TERowParallelLinear for the attention output and the down projection).
//
// In an FP8 run only these GEMMs run in FP8 (ComputeOp::linear_layer, at the GPU's FP8 curve:
// compute/compute_model.hpp); attention, the logits, norms, activations, the loss and the optimizer
// stay in BF16, as in Transformer Engine, whose fp8_autocast converts only its own modules (the
// attention core in FP8 is a separate option, fp8_dpa, off by default; Megatron-Core's output layer is
// not a Transformer Engine module). Around each FP8 GEMM, per micro-batch:
//   forward   the input is cast to FP8 with its transpose for the weight gradient: after a norm the
//             norm writes FP8 itself (layernorm_fwd_fp8) and the transpose waits for the backward
//             pass (fp8_transpose: 2E bytes, read and write one byte per element); otherwise one fused
//             cast-transpose kernel (fp8_cast_transpose_fused: 4E bytes, two to read, one and one to
//             write);
//   backward  the output gradient is cast to FP8 E5M2 with its transpose and the bias gradient
//             (fp8_cast_transpose_bgrad_fused: 4E bytes, one kernel).
// Not costed: the FP8 copies of the weights (cast and transposed once per iteration, not per
// micro-batch), the amax history and scale updates (a few kernels per iteration) and the amax
// reductions across the tensor- and data-parallel groups (a few bytes each).
#pragma once

#include <string_view>
#include <vector>

#include "models/transformer/transformer.hpp"

namespace dtsim::models::linear {

// A linear layer's GEMM: gemm_op marked as one that runs in FP8 in an FP8 run.
LayerOp gemm(std::string_view name, double m, double n, double k, double a);

// In an FP8 run (`fp8`), the fused cast-transpose of a linear layer's input of `elements` elements in
// the forward pass (the attention output and the down projection, whose inputs no norm writes).
void input_cast_forward(std::vector<LayerOp>& ops, std::string_view name, double elements, bool fp8);
// In an FP8 run, the transpose in the backward pass of an input its norm wrote in FP8 (QKV and the up
// projection).
void input_transpose_backward(std::vector<LayerOp>& ops, std::string_view name, double elements, bool fp8);
// In an FP8 run, the cast of a linear layer's output gradient (`elements` elements) in the backward pass.
void grad_cast_backward(std::vector<LayerOp>& ops, std::string_view name, double elements, bool fp8);

}  // namespace dtsim::models::linear
