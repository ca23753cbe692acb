// PyTorch autocast with FP32 parameters (torch.autocast around an FP32 nn.Module: Hugging Face
// transformers' Trainer with bf16=True or fp16=True, Lightning's "bf16-mixed", a plain training loop
// with torch.autocast): the kernels it adds to a transformer layer, as memory-bound cost declarations.
// config::TrainingSpec::autocast turns it on; `a` is the 16-bit element size, W a layer's linear weight
// elements on this rank, E the residual stream's elements.
//
// Facts (PyTorch torch/amp/autocast_mode.py and aten/src/ATen/autocast_mode.cpp): a linear's weight and
// input are cast to the 16-bit type before its GEMM; a weight (a leaf that requires a gradient) is cast
// once per autocast region and the cast cached, an activation at every call. Backward, each cast's
// gradient is cast back to the source's FP32 (ToCopyBackward), and gradients reaching one FP32 tensor
// from several consumers are summed in FP32. The embedding's output and the residual stream stay FP32
// (elementwise.hpp's autocast rows: norms and residual additions).
//
//   weight casts        forward, one kernel per weight tensor: (4 + a) W, streaming (narrowing cast)
//   weight grad casts   backward, one kernel per weight tensor: (a + 4) W, widening_cast
//   input casts         forward, one kernel per projection reading a norm's FP32 output: (4 + a) E each
//                       (eager Llama-style modules: q, k and v; gate and up; fused and GPT-style modules
//                       one each)
//   input grad casts    backward, one widening cast (a + 4) E per projection, then the FP32 gradients
//                       summed, 12 E per extra projection
//
// Memory: FP32 weights (4 B), the cached 16-bit copies (a = 2 B), FP32 gradients (4 B) and Adam's two
// FP32 moments (8 B) are 18 B per parameter, as 16-bit weights, FP32 gradients and FP32 master weights
// and moments are: the memory model's per-parameter bytes hold. The optimizer step writes no 16-bit copy.
#pragma once

#include <string_view>
#include <vector>

#include "models/transformer/transformer.hpp"

namespace dtsim::models::autocast {

LayerOp weight_casts(std::string_view name, double weight_elements, int tensors, double a);
LayerOp weight_grad_casts(std::string_view name, double weight_elements, int tensors, double a);
void input_casts(std::vector<LayerOp>& ops, std::string_view name, double elements, int projections, double a);
void input_grad_casts(std::vector<LayerOp>& ops, std::string_view name, std::string_view sum_name,
                      double elements, int projections, double a);

}  // namespace dtsim::models::autocast
