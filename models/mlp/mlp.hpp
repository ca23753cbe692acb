// Multi-layer perceptron as hardware-free cost declarations: input_size -> hidden_size (ReLU),
// `layers` x (hidden_size -> hidden_size, ReLU), hidden_size -> output_size, mean-squared-error loss.
// The input layer takes the place of the transformer's embedding (first pipeline stage), the repeated
// hidden layers that of its blocks, the output layer and loss that of its head (last stage).
//
// Per linear layer in -> out on a micro-batch of b samples (row-major, as a BLAS implementation runs it):
//   forward   Y = X W            GEMM m = b, n = out, k = in       then bias + ReLU: read and write b x out
//   backward  dY *= ReLU'(Y)     read dY and Y, write dY            (no ReLU on the output layer)
//             dW = X^T dY        GEMM m = in, n = out, k = b        db = column sums of dY: read b x out
//             dX = dY W^T        GEMM m = b, n = in, k = out        (not for the input layer)
//   loss      dY = 2 (Y - T) / b read Y and T, write dY
// FLOPs 2 m n k per GEMM; model FLOPs 6 x weights x samples (forward + backward, Kaplan et al. 2020,
// "Scaling Laws for Neural Language Models", Sec. 2.1). No tensor or context parallelism.
#pragma once

#include <cstdint>

#include "config/scenario.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::models {

LayerProgram mlp_hidden_layer(const config::TransformerSpec& model, const ShardConfig& shard);
LayerProgram mlp_input_layer(const config::TransformerSpec& model, const ShardConfig& shard);
LayerProgram mlp_output_layer(const config::TransformerSpec& model, const ShardConfig& shard);

double mlp_parameters_per_layer(const config::TransformerSpec& model);  // hidden layer: weights + bias
double mlp_input_parameters(const config::TransformerSpec& model);
double mlp_output_parameters(const config::TransformerSpec& model);
double mlp_model_flops_per_iteration(const config::TransformerSpec& model, std::int64_t global_batch);
// Activations one hidden layer keeps for its backward pass, per micro-batch (linear and ReLU outputs).
double mlp_layer_activation_bytes(const config::TransformerSpec& model, std::int64_t micro_batch,
                                  config::Precision precision);

}  // namespace dtsim::models
