#include "models/transformer/linear.hpp"

namespace dtsim::models::linear {

LayerOp gemm(std::string_view name, double m, double n, double k, double a) {
  LayerOp op = gemm_op(name, m, n, k, a);
  op.compute.linear_layer = true;
  return op;
}

void input_cast_forward(std::vector<LayerOp>& ops, std::string_view name, double elements, bool fp8) {
  if (fp8) ops.push_back(memory_op(name, 4 * elements));
}

void input_transpose_backward(std::vector<LayerOp>& ops, std::string_view name, double elements, bool fp8) {
  if (fp8) ops.push_back(memory_op(name, 2 * elements));
}

void grad_cast_backward(std::vector<LayerOp>& ops, std::string_view name, double elements, bool fp8) {
  if (fp8) ops.push_back(memory_op(name, 4 * elements));
}

}  // namespace dtsim::models::linear
