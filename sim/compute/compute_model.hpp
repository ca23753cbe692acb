// Duration of a compute operator on one GPU (DESIGN.md, "Compute model"):
//
//   t = max( flops / (peak(precision) * efficiency(op)),  bytes / (hbm_bandwidth * memory_efficiency) )
//       + kernels * kernel_launch
//
// efficiency(op) is the GEMM efficiency curve of gemm_efficiency.hpp for gemm ops, the profile's
// attention efficiency for attention ops, and irrelevant for memory-bound ops (they have no FLOPs
// worth costing: their time is the bandwidth term). A pure function of the op and the profile.
#pragma once

#include "config/hardware.hpp"
#include "core/units.hpp"
#include "graph/ops.hpp"

namespace dtsim::compute {

class ComputeModel {
 public:
  ComputeModel(const config::GpuProfile& gpu, config::Precision precision);

  core::TimeNs duration(const graph::ComputeOp& op) const;
  double duration_s(const graph::ComputeOp& op) const;
  double peak_flops_per_s() const { return peak_flops_per_s_; }

 private:
  const config::GpuProfile* gpu_;
  const config::GemmCurve* curve_;
  double peak_flops_per_s_;
  double memory_bytes_per_s_;
};

}  // namespace dtsim::compute
