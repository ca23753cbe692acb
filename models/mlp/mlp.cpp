#include "models/mlp/mlp.hpp"

#include <string_view>

#include "models/transformer/linear.hpp"

namespace dtsim::models {

namespace {

enum class LinearRole { input, hidden, output };

LayerProgram linear_layer(double in, double out, const ShardConfig& sh, LinearRole role) {
  const double a = activation_bytes_per_element(sh.precision);
  const double b = static_cast<double>(sh.micro_batch);
  LayerProgram p;
  p.forward.push_back(linear::gemm("mlp_linear", b, out, in, a));
  if (role == LinearRole::output) {
    p.forward.push_back(memory_op("mlp_bias", 2 * b * out * a));
    p.forward.push_back(memory_op("mse_loss", 3 * b * out * a));
  } else {
    p.forward.push_back(memory_op("mlp_bias_relu", 2 * b * out * a));
    p.backward.push_back(memory_op("mlp_relu_bwd", 3 * b * out * a));
  }
  p.backward.push_back(weight_grad_op(linear::gemm("mlp_linear_wgrad", in, out, b, a)));
  p.backward.push_back(weight_grad_op(memory_op("mlp_bias_grad", b * out * a)));
  if (role != LinearRole::input) p.backward.push_back(linear::gemm("mlp_linear_dgrad", b, in, out, a));
  return p;
}

double h_of(const config::TransformerSpec& m) { return static_cast<double>(m.hidden_size); }

}  // namespace

LayerProgram mlp_hidden_layer(const config::TransformerSpec& m, const ShardConfig& sh) {
  return linear_layer(h_of(m), h_of(m), sh, LinearRole::hidden);
}

LayerProgram mlp_input_layer(const config::TransformerSpec& m, const ShardConfig& sh) {
  return linear_layer(static_cast<double>(m.input_size), h_of(m), sh, LinearRole::input);
}

LayerProgram mlp_output_layer(const config::TransformerSpec& m, const ShardConfig& sh) {
  return linear_layer(h_of(m), static_cast<double>(m.output_size), sh, LinearRole::output);
}

double mlp_parameters_per_layer(const config::TransformerSpec& m) { return h_of(m) * h_of(m) + h_of(m); }

double mlp_input_parameters(const config::TransformerSpec& m) {
  return static_cast<double>(m.input_size) * h_of(m) + h_of(m);
}

double mlp_output_parameters(const config::TransformerSpec& m) {
  const double out = static_cast<double>(m.output_size);
  return h_of(m) * out + out;
}

double mlp_model_flops_per_iteration(const config::TransformerSpec& m, std::int64_t global_batch) {
  const double weights = static_cast<double>(m.layers) * h_of(m) * h_of(m) +
                         static_cast<double>(m.input_size) * h_of(m) +
                         h_of(m) * static_cast<double>(m.output_size);
  return 6 * weights * static_cast<double>(global_batch);
}

double mlp_layer_activation_bytes(const config::TransformerSpec& m, std::int64_t micro_batch,
                                  config::Precision precision) {
  return 2 * static_cast<double>(micro_batch) * h_of(m) * activation_bytes_per_element(precision);
}

}  // namespace dtsim::models
