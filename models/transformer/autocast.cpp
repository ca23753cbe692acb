#include "models/transformer/autocast.hpp"

namespace dtsim::models::autocast {

namespace {

LayerOp cast(std::string_view name, double bytes, int kernels, core::MemoryClass memory) {
  LayerOp op = memory_op(name, bytes, false, memory);
  op.compute.kernels = kernels;
  return op;
}

}  // namespace

LayerOp weight_casts(std::string_view name, double weight_elements, int tensors, double a) {
  return cast(name, (4 + a) * weight_elements, tensors, core::MemoryClass::streaming);
}

LayerOp weight_grad_casts(std::string_view name, double weight_elements, int tensors, double a) {
  return weight_grad_op(cast(name, (a + 4) * weight_elements, tensors, core::MemoryClass::widening_cast));
}

void input_casts(std::vector<LayerOp>& ops, std::string_view name, double elements, int projections, double a) {
  ops.push_back(cast(name, (4 + a) * elements * projections, projections, core::MemoryClass::streaming));
}

void input_grad_casts(std::vector<LayerOp>& ops, std::string_view name, std::string_view sum_name,
                      double elements, int projections, double a) {
  ops.push_back(cast(name, (a + 4) * elements * projections, projections, core::MemoryClass::widening_cast));
  if (projections > 1) {
    LayerOp sum = cast(sum_name, 12 * elements * (projections - 1), projections - 1, core::MemoryClass::streaming);
    ops.push_back(sum);
  }
}

}  // namespace dtsim::models::autocast
