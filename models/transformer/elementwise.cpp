#include "models/transformer/elementwise.hpp"

namespace dtsim::models::elementwise {

namespace {

using core::MemoryClass;

LayerOp pass(std::string_view name, double bytes, int kernels, MemoryClass memory = MemoryClass::streaming) {
  LayerOp op;
  op.name = name;
  op.compute.cls = graph::ComputeClass::memory;
  op.compute.bytes = bytes;
  op.compute.kernels = kernels;
  op.compute.memory = memory;
  return op;
}

bool eager_rms(const Kernels& k) { return k.eager() && k.rms_norm; }

// Megatron-LM of 2020-2022's GPT-style layer (scripted): apex's LayerNorm, biases.
bool scripted_gpt(const Kernels& k) { return k.scripted() && !k.rms_norm; }

}  // namespace

// Bytes per element of the residual stream, which the norms read and the residual additions write.
double stream_bytes(const Kernels& k) { return k.autocast ? 4.0 : k.a; }

LayerOp norm_forward(std::string_view name, const Kernels& k, double elements) {
  if (eager_rms(k) && k.autocast) return pass(name, 24 * elements, 6, MemoryClass::norm_eager_forward);
  if (eager_rms(k)) return pass(name, (24 + 4 * k.a) * elements, 8, MemoryClass::norm_eager_forward);
  return pass(name, 2 * stream_bytes(k) * elements, 1, MemoryClass::norm_forward);
}

LayerOp norm_backward(std::string_view name, const Kernels& k, double elements) {
  if (eager_rms(k) && k.autocast) return pass(name, 84 * elements, 10, MemoryClass::norm_eager_backward);
  if (eager_rms(k)) return pass(name, (8 * k.a + 68) * elements, 12, MemoryClass::norm_eager_backward);
  const double r = stream_bytes(k);
  if (scripted_gpt(k)) return pass(name, 3 * r * elements, 3, MemoryClass::norm_backward);
  return pass(name, 3 * r * elements, 1, MemoryClass::norm_backward);
}

LayerOp rotary(std::string_view name, const Kernels& k, double rotated_elements) {
  // Queries and keys: three kernels for each eagerly.
  if (k.eager()) return pass(name, (16 + 2 * k.a) * rotated_elements, 6);
  return pass(name, 2 * k.a * rotated_elements, 1);
}

LayerOp activation_forward(const Kernels& k, double intermediate_elements) {
  if (!k.rms_norm && k.hf()) return pass("gelu", 18 * k.a * intermediate_elements, 8);
  if (!k.rms_norm) return pass("gelu", 2 * k.a * intermediate_elements, 1);
  if (k.eager()) return pass("swiglu", 5 * k.a * intermediate_elements, 2);
  return pass("swiglu", 3 * k.a * intermediate_elements, 1);
}

LayerOp activation_backward(const Kernels& k, double intermediate_elements) {
  if (!k.rms_norm && k.hf()) return pass("gelu_bwd", 28 * k.a * intermediate_elements, 11);
  if (!k.rms_norm) return pass("gelu_bwd", 3 * k.a * intermediate_elements, 1);
  if (k.eager()) return pass("swiglu_bwd", 9 * k.a * intermediate_elements, 3);
  return pass("swiglu_bwd", 5 * k.a * intermediate_elements, 1);
}

LayerOp residual_forward(std::string_view name, const Kernels& k, double elements) {
  if (k.autocast) {
    if (k.eager() && !k.rms_norm) return pass(name, (3 * k.a + 9) * elements, 2, MemoryClass::mixed_add);
    return pass(name, (8 + k.a) * elements, 1, MemoryClass::mixed_add);
  }
  if (!k.eager()) return pass(name, (3 * k.a + 1) * elements, 1);
  if (k.rms_norm) return pass(name, 3 * k.a * elements, 1);
  return pass(name, (5 * k.a + 1) * elements, 2);
}

LayerOp residual_backward(std::string_view name, const Kernels& k, double elements) {
  if (k.autocast) {
    if (k.eager() && !k.rms_norm) return pass(name, (3 * k.a + 17) * elements, 3);  // with dropout's backward
    return pass(name, (16 + k.a) * elements, 2);
  }
  if (!k.eager()) return pass(name, (2 * k.a + 1) * elements, 1);
  if (k.rms_norm) return pass(name, 3 * k.a * elements, 1);
  return pass(name, (5 * k.a + 1) * elements, 2);
}

void repeat_kv(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double tokens,
               double heads, double kv_heads, double head_dim) {
  if (!k.eager() || kv_heads >= heads) return;
  // K and V: forward read the kv heads and write every query head's copy, backward the reverse.
  ops.push_back(pass(name, 2 * k.a * tokens * (kv_heads + heads) * head_dim, 2));
}

void attention_output_layout(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k,
                             double elements) {
  if (k.eager() || k.scripted()) ops.push_back(pass(name, 2 * k.a * elements, 1, MemoryClass::transpose));
}

void up_projection_grad_sum(std::vector<LayerOp>& ops, const Kernels& k, double elements) {
  // With autocast the two gradients are summed in FP32 after their casts (autocast.hpp).
  if (eager_rms(k) && !k.autocast) ops.push_back(pass("mlp_up_grad_sum", 3 * k.a * elements, 1));
}

void bias_add(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double elements) {
  if (scripted_gpt(k)) ops.push_back(pass(name, 2 * k.a * elements, 1));
}

void bias_grad(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double elements) {
  if ((k.scripted() || k.eager()) && !k.rms_norm)
    ops.push_back(weight_grad_op(pass(name, k.a * elements, 1, MemoryClass::reduction)));
}

void residual_grad_sum(std::vector<LayerOp>& ops, std::string_view name, const Kernels& k, double elements) {
  if (k.scripted()) ops.push_back(pass(name, 3 * k.a * elements, 1));
}

void attention_core_grad_extras(std::vector<LayerOp>& ops, const Kernels& k, double qk_elements,
                                double qkv_elements) {
  if (!k.scripted()) return;
  ops.push_back(pass("attention_scores_grad_scale", 2 * 2 * k.a * qk_elements, 2));
  ops.push_back(pass("qkv_split_grad", 2 * k.a * qkv_elements, 1));
}

}  // namespace dtsim::models::elementwise
