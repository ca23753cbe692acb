// The dense part of a DLRM (config/dlrm.hpp) as hardware-free cost declarations: the operators one GPU
// runs on its share of the batch, b samples, in execution order. The embedding tables' lookups and
// exchanges depend on how they are sharded: parallel/embedding_shards.hpp.
//
// Linear layers in -> out (bottom and top MLP, row-major as cuBLAS runs them, as models/mlp):
//   forward   Y = X W            GEMM m = b, n = out, k = in       then bias + ReLU: read and write b x out
//   backward  ReLU'              read dY and Y, write dY
//             dW = X^T dY        GEMM m = in, n = out, k = b        db = column sums of dY: read b x out
//             dX = dY W^T        GEMM m = b, n = in, k = out        (not for the bottom MLP's first layer:
//                                                                   the dense features need no gradient)
// The top MLP's last layer has no ReLU; the loss is a sigmoid with binary cross-entropy over b logits.
// Interaction of F = tables + 1 vectors of width d (the bottom MLP's output and the pooled embeddings):
//   dot      stack them (write b F d), Z = T T^T per sample (batched GEMM m = n = F, k = d: 2 b F^2 d
//            FLOPs), keep the F (F - 1) / 2 products above the diagonal and concatenate them after the
//            dense vector: the top MLP's input is d + F (F - 1) / 2 wide (torchrec's InteractionArch);
//            backward dT = (dZ + dZ^T) T, the same FLOPs, and the split back into the F gradients
//   dcn_v2   x0 = the concatenation, D0 = F d wide; each of the L cross layers computes
//            x_{l+1} = x0 * (V (U x_l) + c) + x_l with U: D0 -> r and V: r -> D0 (two GEMMs of b D0 r, then
//            an element-wise pass reading x0, x_l and the product and writing x_{l+1}); backward two data-
//            and two weight-gradient GEMMs per layer and the element-wise pass's gradient (torchrec's
//            LowRankCrossNet; Wang et al. 2021, arXiv 2008.13535, Eq. 2 with the low-rank mixture of one
//            expert); the top MLP's input is D0 wide
// Bytes per element: the run's precision (4 in FP32 and TF32, 2 in FP16 and BF16).
// FLOPs: 2 m n k per GEMM; model FLOPs per sample 3x the forward GEMMs' (backward = two GEMMs per
// forward GEMM), the embeddings' sums not counted.
#pragma once

#include <cstdint>
#include <vector>

#include "config/dlrm.hpp"
#include "models/transformer/transformer.hpp"

namespace dtsim::models {

struct DlrmDensePrograms {
  std::vector<LayerOp> bottom_forward;
  std::vector<LayerOp> interaction_forward;
  std::vector<LayerOp> top_forward;  // the loss included
  std::vector<LayerOp> top_backward;
  std::vector<LayerOp> interaction_backward;
  std::vector<LayerOp> bottom_backward;
};

DlrmDensePrograms dlrm_dense_programs(const config::DlrmSpec& model, std::int64_t samples,
                                      config::Precision precision);

// The top MLP's input width: d + F (F - 1) / 2 (dot) or F d (dcn_v2).
std::int64_t dlrm_interaction_width(const config::DlrmSpec& model);

// Parameters of the dense part (weights and biases), by part, and in all.
double dlrm_bottom_parameters(const config::DlrmSpec& model);
double dlrm_interaction_parameters(const config::DlrmSpec& model);  // DCN-v2's cross layers; 0 for dot
double dlrm_top_parameters(const config::DlrmSpec& model);
double dlrm_dense_parameters(const config::DlrmSpec& model);
double dlrm_embedding_parameters(const config::DlrmSpec& model);  // rows x dim over the tables

// Bytes of a dense parameter and of its gradient (FP32).
inline constexpr double kDenseBytes = 4.0;

// Bytes of an embedding id (int64, torchrec's KeyedJaggedTensor).
inline constexpr double kEmbeddingIdBytes = 8.0;

// Bytes of optimizer state per value, for an embedding row's elements and the dense parameters alike
// (FP32 states: sgd none, adagrad one, adam two).
double optimizer_state_bytes_per_value(config::Optimizer optimizer);

// A table's rows in the embedding precision and their optimizer states.
double embedding_table_state_bytes(const config::EmbeddingTable& table, config::Precision embedding_precision,
                                   config::Optimizer optimizer);

// The model state a checkpoint saves once, wherever it lives (HBM, host memory, parameter servers):
// the dense FP32 parameters and every table's rows in the embedding precision, each with its optimizer
// states. A full checkpoint: Check-N-Run's incremental and quantized ones (Eisenman et al., NSDI'22)
// write less.
double dlrm_state_bytes(const config::DlrmSpec& model, config::Optimizer optimizer);

// Model FLOPs of one iteration of `global_batch` samples (forward and backward of the dense part).
double dlrm_model_flops_per_iteration(const config::DlrmSpec& model, std::int64_t global_batch);

// Activations the dense part keeps for its backward pass, for `samples` samples.
double dlrm_dense_activation_bytes(const config::DlrmSpec& model, std::int64_t samples,
                                   config::Precision precision);

}  // namespace dtsim::models
