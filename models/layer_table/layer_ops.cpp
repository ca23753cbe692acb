#include "models/layer_table/layer_ops.hpp"

#include <algorithm>
#include <cmath>

#include "core/checked_math.hpp"

namespace dtsim::models {

namespace {

constexpr double kFp32Bytes = 4.0;
constexpr double kIndexBytes = 8.0;
constexpr double kOptimizerPasses = 5.0;

int forward_passes(config::Epilogue e) {
  switch (e) {
    case config::Epilogue::none:
      return 0;
    case config::Epilogue::relu:
    case config::Epilogue::gelu:
      return 2;
    case config::Epilogue::bn:
    case config::Epilogue::layernorm:
    case config::Epilogue::softmax:
      return 3;
    case config::Epilogue::bn_relu:
      return 5;
  }
  return 0;
}

graph::ComputeOp gemm(double flops, std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t batch,
                      double bytes) {
  graph::ComputeOp op;
  op.cls = graph::ComputeClass::gemm;
  op.flops = flops;
  op.gemm = graph::GemmShape{m, n, k, batch};
  op.bytes = bytes;
  return op;
}

graph::ComputeOp memory(double bytes) {
  graph::ComputeOp op;
  op.cls = graph::ComputeClass::memory;
  op.bytes = bytes;
  return op;
}

}  // namespace

double bytes_per_value(config::Precision p) {
  return (p == config::Precision::fp32 || p == config::Precision::tf32) ? 4.0 : 2.0;
}

std::vector<LayerOps> layer_ops(const config::LayerTable& table, std::int64_t batch, config::Precision p) {
  const double value = bytes_per_value(p);
  const double scale = value / kFp32Bytes;
  const double b = static_cast<double>(batch);
  std::vector<LayerOps> out;
  out.reserve(table.layers.size());
  for (std::size_t i = 0; i < table.layers.size(); ++i) {
    const config::LayerSpec& l = table.layers[i];
    LayerOps ops;
    const double out_bytes = l.activation_bytes * scale * b;
    const double flops = l.forward_flops * b;
    switch (l.kind) {
      case config::LayerKind::conv:
      case config::LayerKind::fc: {
        // Rows of the GEMM: products of table sizes and the batch, in doubles (exact below 2^53).
        const double rows = static_cast<double>(l.gemm_m) * b;
        const std::int64_t m = core::saturating_int64(rows);
        const double weights = l.params() * value;
        const double in_bytes = rows * static_cast<double>(l.gemm_k) * value;
        const std::size_t first_forward = ops.forward.size();
        ops.forward.push_back(gemm(flops, m, l.gemm_n, l.gemm_k, 1, in_bytes + weights + out_bytes));
        if (i != 0)
          ops.backward.push_back(gemm(flops, m, l.gemm_k, l.gemm_n, 1, in_bytes + weights + out_bytes));
        // Weight gradient: a sum over the batch. Convolutions split the reduction by sample (one
        // product per sample, summed), as split-K weight-gradient kernels do; a fully connected layer
        // (one row per sample) reduces over the whole batch in one product.
        if (l.gemm_m > 1) {
          ops.backward.push_back(
              gemm(flops, l.gemm_k, l.gemm_n, l.gemm_m, batch, in_bytes + weights + out_bytes));
        } else {
          ops.backward.push_back(gemm(flops, l.gemm_k, l.gemm_n, m, 1, in_bytes + weights + out_bytes));
        }
        if (l.kind == config::LayerKind::conv) {
          for (std::size_t j = first_forward; j < ops.forward.size(); ++j) ops.forward[j].implicit_gemm = true;
          for (auto& op : ops.backward) op.implicit_gemm = true;
        }
        break;
      }
      case config::LayerKind::attention: {
        graph::ComputeOp op;
        op.cls = graph::ComputeClass::attention;
        op.flops = flops;
        op.gemm = graph::GemmShape{l.gemm_m, l.gemm_n, l.gemm_k,
                                   core::saturating_int64(static_cast<double>(l.gemm_batch) * b)};
        op.bytes = out_bytes;
        op.kernels = 2;
        ops.forward.push_back(op);
        op.flops = 2.0 * flops;
        op.kernels = 4;
        ops.backward.push_back(op);
        break;
      }
      case config::LayerKind::pool:
      case config::LayerKind::norm:
      case config::LayerKind::add: {
        const double in_bytes = (l.input_bytes > 0.0 ? l.input_bytes * scale * b : out_bytes);
        ops.forward.push_back(memory(in_bytes + out_bytes));
        ops.backward.push_back(memory(2.0 * (in_bytes + out_bytes)));
        break;
      }
      case config::LayerKind::embedding: {
        const double rows = b * static_cast<double>(l.lookups_per_sample);
        const double gathered = rows * static_cast<double>(l.row_params) * value;
        ops.forward.push_back(memory(2.0 * gathered));
        ops.backward.push_back(memory(2.0 * gathered));
        break;
      }
    }
    const int passes = forward_passes(l.epilogue);
    if (passes > 0) {
      graph::ComputeOp fwd = memory(passes * out_bytes);
      fwd.kernels = (l.epilogue == config::Epilogue::bn_relu) ? 2 : 1;
      ops.forward.push_back(fwd);
      graph::ComputeOp bwd = memory(2.0 * passes * out_bytes);
      bwd.kernels = fwd.kernels;
      ops.backward.push_back(bwd);
    }
    out.push_back(std::move(ops));
  }
  return out;
}

std::vector<Variable> variables(const config::LayerTable& table, std::int64_t batch, config::Precision p) {
  const double value = bytes_per_value(p);
  std::vector<Variable> out;
  for (std::size_t i = 0; i < table.layers.size(); ++i) {
    const config::LayerSpec& l = table.layers[i];
    for (std::size_t t = 0; t < l.tensors.size(); ++t) {
      Variable v;
      v.layer = static_cast<std::uint32_t>(i);
      v.dense_bytes = l.tensors[t] * value;
      v.step_bytes = v.dense_bytes;
      // The looked-up table is the layer's first tensor.
      if (l.sparse && t == 0) {
        const double table_rows = std::floor(l.tensors[t] / static_cast<double>(l.row_params));
        const double rows =
            std::min(static_cast<double>(batch) * static_cast<double>(l.lookups_per_sample), table_rows);
        v.sparse = true;
        v.step_bytes = rows * (static_cast<double>(l.row_params) * value + kIndexBytes);
      }
      out.push_back(v);
    }
  }
  return out;
}

graph::ComputeOp optimizer_op(double params) {
  graph::ComputeOp op;
  op.cls = graph::ComputeClass::optimizer;
  op.bytes = kOptimizerPasses * kFp32Bytes * params;
  return op;
}

double activation_bytes(const config::LayerTable& table, std::int64_t batch, config::Precision p) {
  double sum = 0.0;
  for (const auto& l : table.layers) sum += l.activation_bytes;
  return sum * static_cast<double>(batch) * bytes_per_value(p) / kFp32Bytes;
}

}  // namespace dtsim::models
