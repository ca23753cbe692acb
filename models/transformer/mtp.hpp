// Multi-token prediction (DeepSeek-AI 2024, arXiv 2412.19437, Sec. 2.2 and Fig. 3; Megatron-Core's
// megatron/core/transformer/multi_token_prediction.py, --mtp-num-layers): D sequential modules on the last
// pipeline stage, after the main model. Module k predicts the token k + 1 ahead: it normalizes the
// previous depth's hidden states (the main model's output for k = 1) and the shared embedding of the
// tokens shifted by k (RMSNorm each), concatenates them, projects 2h -> h (M_k, a column-parallel linear
// without bias whose output is gathered over the tensor group and, with sequence parallelism, split by
// sequence again), runs one transformer layer of the model's last kind, and then the shared output head
// and its cross-entropy loss (the final norm, logits and loss of head_layer()). Its loss is scaled by
// lambda / D; the scale costs nothing.
//
// Per micro-batch and depth the lowering (parallel/lower.cpp) runs, after the main head's forward: the
// embedding's lookup (embedding_layer()), the projection program below, the layer, the head; backward
// the reverse, before the main head's backward. Parameters of a module: its projection 2h x h, its two
// input norms and its final norm, and one layer; the embedding and the output layer are the model's
// (the last stage holds a copy of the embedding table, Megatron-Core's GPTModel builds it where MTP runs;
// the all-reduce of its gradient with the first stage's is not modelled).
// Model FLOPs per token and depth: the layer's, 2 x 2h x h for the projection and 2 h V for the logits.
#pragma once

#include <vector>

#include "config/scenario.hpp"
#include "models/transformer/token_shard.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::models {

// Forward: the two input norms, the concatenation, the projection and its gather; backward: the
// gradient's gather by sequence (with sequence parallelism), the projection's data and weight gradients
// with the column-parallel reduction of the 2h-wide input gradient, the norms' backward and the sum
// into the main model's output gradient.
LayerProgram mtp_projection_program(const TokenShard& shard);

// Parameters of one module besides its transformer layer: the projection and three norms (RMSNorm
// weights, or LayerNorm weights and biases for a GELU model).
double mtp_projection_parameters(const config::TransformerSpec& model);

}  // namespace dtsim::models
