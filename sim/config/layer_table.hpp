// A workload given as a per-layer table (models/layer_table/tables/<id>.json, models/layer_table/README.md, docs/data-parallel.md):
// per layer its forward FLOPs, implicit-GEMM shape and output activation bytes for one sample, its
// parameter tensors (variables) and whether it is a sparse embedding. Typed and validated by
// layer_table_loader; costed by models/layer_table (the compute model's roofline).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace dtsim::config {

enum class LayerKind { conv, fc, attention, pool, embedding, norm, add };

// Memory-bound kernels that follow a layer (batch norm, activation, softmax, layer norm).
enum class Epilogue { none, bn, relu, bn_relu, softmax, gelu, layernorm };

struct LayerSpec {
  std::string name;
  LayerKind kind = LayerKind::conv;
  double forward_flops = 0.0;     // per sample
  std::int64_t gemm_m = 0;        // implicit GEMM per sample: m rows (output pixels or tokens)
  std::int64_t gemm_n = 0;        // output channels
  std::int64_t gemm_k = 0;        // reduction: input channels x kernel area
  std::int64_t gemm_batch = 1;    // independent products (attention heads)
  std::vector<double> tensors;    // parameter count of each variable
  double activation_bytes = 0.0;  // output activations per sample (fp32)
  double input_bytes = 0.0;       // pool and add layers: input activations per sample (fp32)
  Epilogue epilogue = Epilogue::none;
  bool sparse = false;                  // embedding updated only in the rows looked up
  std::int64_t lookups_per_sample = 0;  // sparse: rows read per sample
  std::int64_t row_params = 0;          // sparse: parameters per row

  double params() const {
    double sum = 0.0;
    for (const double t : tensors) sum += t;
    return sum;
  }
};

// Gradient-noise-scale constants of the model's reference training run (models/convergence).
struct ConvergencePreset {
  double b_noise = 0.0;  // critical batch, in samples
  double s_min = 0.0;    // steps to the target with an infinite batch
  std::string target;    // what "converged" means
  std::string source;
};

struct LayerTable {
  std::string id;
  std::string name;
  std::string source;
  std::string sample;           // what one sample is: "image" or "sequence"
  std::int64_t input_size = 0;  // image side in pixels, or sequence length in tokens
  std::vector<LayerSpec> layers;
  ConvergencePreset convergence;

  double params() const {
    double sum = 0.0;
    for (const auto& l : layers) sum += l.params();
    return sum;
  }
  double forward_flops() const {
    double sum = 0.0;
    for (const auto& l : layers) sum += l.forward_flops;
    return sum;
  }
};

}  // namespace dtsim::config
