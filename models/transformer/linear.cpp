#include "models/transformer/linear.hpp"

namespace dtsim::models::linear {

LayerOp gemm(std::string_view name, double m, double n, double k, double a) {
  LayerOp op = gemm_op(name, m, n, k, a);
  op.compute.linear_layer = true;
  return op;
}

namespace fp8_casts_detail {
// One amax reduction over the operand (2 bytes read per element), then the fused scale-cast-transpose.
void amax_and_cast(std::vector<LayerOp>& ops, Fp8OpNames names, double elements) {
  ops.push_back(memory_op(names.amax, 2 * elements, false, core::MemoryClass::amax));
  ops.push_back(memory_op(names.cast, 4 * elements, false, core::MemoryClass::fp8_cast_transpose));
}
}  // namespace fp8_casts_detail

void input_cast_forward(std::vector<LayerOp>& ops, Fp8OpNames names, double elements, bool after_norm,
                        Fp8Casts casts) {
  if (!casts.on) return;
  if (casts.recipe == config::Fp8Recipe::tensorwise) {
    fp8_casts_detail::amax_and_cast(ops, names, elements);
  } else if (!after_norm) {
    ops.push_back(memory_op(names.cast, 4 * elements, false, core::MemoryClass::fp8_cast_transpose));
  }
}

void weight_cast_forward(std::vector<LayerOp>& ops, Fp8OpNames names, double elements, Fp8Casts casts) {
  if (casts.on && casts.recipe == config::Fp8Recipe::tensorwise) fp8_casts_detail::amax_and_cast(ops, names, elements);
}

void input_transpose_backward(std::vector<LayerOp>& ops, std::string_view name, double elements,
                              Fp8Casts casts) {
  if (casts.on && casts.recipe == config::Fp8Recipe::delayed)
    ops.push_back(weight_grad_op(memory_op(name, 2 * elements)));
}

void grad_cast_backward(std::vector<LayerOp>& ops, Fp8OpNames names, double elements, Fp8Casts casts) {
  if (!casts.on) return;
  if (casts.recipe == config::Fp8Recipe::tensorwise) {
    fp8_casts_detail::amax_and_cast(ops, names, elements);
  } else {
    ops.push_back(memory_op(names.cast, 4 * elements, false, core::MemoryClass::fp8_cast_transpose));
  }
}

}  // namespace dtsim::models::linear
