// The access pattern of a memory-bound kernel, which sets the fraction of HBM bandwidth it reaches: a
// GPU profile states that fraction per class ("memory_classes", every class but streaming, whose rate is
// the profile's memory_efficiency; a class it leaves out streams too), workload models label each memory-bound op with one, and the compute
// model costs the op's bytes at its class's rate (compute/compute_model.hpp).
//
// Classes, each a kind of kernel that training steps run and calibration/torch/kernel_class_probe.py
// times (its bytes are the model's bytes for the op, the class's rate is measured on those bytes):
//   streaming               contiguous, vectorized element-wise kernels: copies, additions, activations,
//                           dropout, narrowing casts (FP32 to BF16)
//   widening_cast           a cast to a wider type (BF16 to FP32; PyTorch's direct_copy kernel, unrolled,
//                           not vectorized)
//   mixed_add               an FP32 tensor added into with a BF16 one (gradient accumulation)
//   reduction               a sum over the tokens (a bias's or a norm weight's gradient)
//   norm_forward            a fused LayerNorm or RMSNorm forward kernel
//   norm_backward           a fused norm's backward kernels (input gradient; weight and bias gradients)
//   norm_eager_forward      RMSNorm as eager PyTorch runs it, forward (elementwise.hpp's 8 kernels)
//   norm_eager_backward     the same, backward
//   transpose               a layout copy that permutes dimensions (transpose(1, 2).contiguous())
//   cross_entropy_forward   PyTorch's cross-entropy over a vocabulary with its FP32 upcast: the cast,
//                           log-softmax and the loss
//   cross_entropy_backward  its backward: the loss's gradient, the log-softmax backward, the cast back
//   optimizer               a multi-tensor optimizer step (fused AdamW, apex's FusedAdam)
//   fp8_cast_transpose      a fused cast of a BF16 tensor to FP8 that writes it and its transpose (read
//                           2 bytes, write 1 + 1 per element); timed by calibration/torch/fp8_step_probe.py
//   amax                    the maximum of |x| over a whole tensor (FP8 current scaling's scale), one
//                           reduction kernel reading the tensor; timed by the same probe
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace dtsim::core {

enum class MemoryClass : std::uint8_t {
  streaming,
  widening_cast,
  mixed_add,
  reduction,
  norm_forward,
  norm_backward,
  norm_eager_forward,
  norm_eager_backward,
  transpose,
  cross_entropy_forward,
  cross_entropy_backward,
  optimizer,
  fp8_cast_transpose,
  amax,
};

inline constexpr std::array<std::string_view, 14> kMemoryClassNames{
    "streaming",          "widening_cast",         "mixed_add",              "reduction",
    "norm_forward",       "norm_backward",         "norm_eager_forward",     "norm_eager_backward",
    "transpose",          "cross_entropy_forward", "cross_entropy_backward", "optimizer",
    "fp8_cast_transpose", "amax"};
inline constexpr std::size_t kMemoryClassCount = kMemoryClassNames.size();

constexpr std::string_view to_string(MemoryClass c) { return kMemoryClassNames[static_cast<std::size_t>(c)]; }

constexpr std::optional<MemoryClass> memory_class_named(std::string_view name) {
  for (std::size_t i = 0; i < kMemoryClassCount; ++i) {
    if (kMemoryClassNames[i] == name) return static_cast<MemoryClass>(i);
  }
  return std::nullopt;
}

}  // namespace dtsim::core
