// A layer table (config/layer_table.hpp) turned into hardware-free cost declarations for one worker's
// batch of `batch` samples: the compute ops of each layer's forward and backward pass, and the
// variables (parameter tensors) whose gradients leave the worker each step.
//
// Costing (the compute model turns these into time with its roofline, compute/compute_model.hpp):
//   conv, fc     forward: one GEMM, the layer's implicit-GEMM shape with m x batch rows (convolutions
//                as implicit GEMMs, as cuDNN's IMPLICIT_GEMM algorithm computes them: Chetlur et al.
//                2014, "cuDNN: Efficient Primitives for Deep Learning", Sec. 3), efficiency from the
//                GPU's GEMM curve; backward: the data-gradient GEMM (m x k x n; skipped for the first
//                layer, whose input needs no gradient) and the weight-gradient GEMM (k x n, reducing
//                over the batch's rows), each with the forward FLOPs. A convolution's weight gradient
//                is split by sample (batch products of k x n x m, then summed: split-K, as weight-
//                gradient kernels parallelize the long reduction); a fully connected layer's is one
//                k x n x batch product.
//   attention    forward: the score and context products (FLOPs from the table) at the GPU's attention
//                efficiency; backward: twice the forward FLOPs.
//   pool, norm   memory-bound: forward reads the input and writes the output; backward twice that.
//   add          a residual addition, costed the same way: forward reads its operands (input_bytes: the
//                branch and the shortcut) and writes their sum; backward twice that (the gradient goes
//                back through the epilogue, and the shortcut's gradient is added to the branch's where
//                the two paths fork).
//   embedding    memory-bound gather of lookups x row_params values; backward the scatter of as many.
//   epilogues    memory-bound passes over the layer's output activations (read + write = 2 passes):
//                relu, gelu 2; bn, layernorm, softmax 3 (statistics, then normalize); bn_relu 5.
//                Backward passes are twice the forward passes (the saved activation and the incoming
//                gradient are read, a gradient written).
// Each op costs one kernel launch per kernel. Bytes per value: 4 for fp32/tf32, 2 for fp16/bf16
// (table activation bytes are fp32 and scaled accordingly).
//
// Variables: each table tensor is one variable, in table order (the order parameter servers place
// them in). Dense variables send their full gradient each step; a sparse embedding sends only the
// rows its batch looked up: rows = min(batch x lookups_per_sample, table rows), each row_params values
// plus an 8-byte index (Parallax, Kim et al. EuroSys'19, Sec. 3: sparse gradients as index-value pairs).
#pragma once

#include <cstdint>
#include <vector>

#include "config/hardware.hpp"
#include "config/layer_table.hpp"
#include "graph/ops.hpp"

namespace dtsim::models {

struct LayerOps {
  std::vector<graph::ComputeOp> forward;
  std::vector<graph::ComputeOp> backward;
};

struct Variable {
  double dense_bytes = 0.0;  // the full tensor
  double step_bytes = 0.0;   // gradient bytes a worker sends per step (= dense_bytes unless sparse)
  bool sparse = false;
  std::uint32_t layer = 0;  // index of the layer it belongs to
};

double bytes_per_value(config::Precision p);

std::vector<LayerOps> layer_ops(const config::LayerTable& table, std::int64_t batch, config::Precision p);

std::vector<Variable> variables(const config::LayerTable& table, std::int64_t batch, config::Precision p);

// Momentum SGD applied on the GPU to `params` parameters: reads parameter, gradient and momentum,
// writes parameter and momentum (5 passes, fp32 master values: 4 bytes each).
graph::ComputeOp optimizer_op(double params);

// Activations kept for the backward pass: every layer's output activations for the batch.
double activation_bytes(const config::LayerTable& table, std::int64_t batch, config::Precision p);

}  // namespace dtsim::models
