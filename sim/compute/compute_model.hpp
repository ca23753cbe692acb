// Duration of a compute operator on one GPU (DESIGN.md, "Compute model"):
//
//   t = max( flops / (peak(precision) * efficiency(op)),  bytes / (hbm_bandwidth * memory_efficiency(class))
//                                                           + host_bytes / (host_link * host_gather_efficiency) )
//       + kernels * kernel_launch
//
// host_bytes are rows of embedding tables in host memory, gathered over the GPU's host link (PCIe) by
// unified-memory kernels; a profile without a host link has no such ops (the plan is refused before).
//
// memory_efficiency(class) is the profile's measured fraction of HBM bandwidth for the op's class of
// memory-bound kernel (core/memory_class.hpp), its streaming memory_efficiency where it states none.
//
// peak and efficiency are those of the run's precision; in an FP8 run only the linear layers' GEMMs
// (ComputeOp::linear_layer, models/transformer/linear.hpp) use FP8's, every other GEMM and attention
// BF16's (Transformer Engine's recipe). peak_flops_per_s() is the run's precision's peak (MFU).
// efficiency(op) is the GEMM efficiency curve of gemm_efficiency.hpp for gemm ops (times its alignment
// factor when a dimension is not a whole number of 16-byte vectors), the profile's
// attention efficiency for attention ops (attention_efficiency.hpp: the profile's rate, reduced when the
// op's heads and query tiles fill the SMs for few waves), and irrelevant for memory-bound ops (they have no
// FLOPs worth costing: their time is the bandwidth term). A pure function of the op and the profile.
//
// duration_scale multiplies every duration (GEMMs, attention, memory-bound kernels, optimizer, launch
// overheads alike): 1 for the model as profiled; measured / predicted one-GPU time when the scenario
// gives a measured one-GPU throughput (results/compute_calibration.hpp). It is the only place where
// that calibration touches the simulation.
#pragma once

#include <array>

#include "config/hardware.hpp"
#include "core/units.hpp"
#include "graph/ops.hpp"

namespace dtsim::compute {

class ComputeModel {
 public:
  ComputeModel(const config::GpuProfile& gpu, config::Precision precision, double duration_scale = 1.0);

  core::TimeNs duration(const graph::ComputeOp& op) const;
  double duration_s(const graph::ComputeOp& op) const;
  double peak_flops_per_s() const { return peak_flops_per_s_; }
  double duration_scale() const { return duration_scale_; }

 private:
  const config::GpuProfile* gpu_;
  const config::GemmCurve* curve_;
  double peak_flops_per_s_;
  // The rates of GEMMs that are not a linear layer's, and of attention: BF16's in an FP8 run.
  const config::GemmCurve* other_curve_;
  double other_peak_flops_per_s_;
  std::array<double, core::kMemoryClassCount> memory_bytes_per_s_{};  // by core::MemoryClass
  double host_bytes_per_s_ = 0.0;  // ComputeOp::host_bytes: host link x host gather efficiency
  double element_bytes_;        // a linear layer's GEMM operands (1 in an FP8 run)
  double other_element_bytes_;  // other GEMMs' (BF16's in an FP8 run)
  double duration_scale_;
};

}  // namespace dtsim::compute
