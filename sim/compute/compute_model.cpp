#include "compute/compute_model.hpp"

#include <algorithm>

#include "compute/attention_efficiency.hpp"
#include "compute/gemm_efficiency.hpp"
#include "core/errors.hpp"

namespace dtsim::compute {

namespace {

double peak_for(const config::GpuProfile& gpu, config::Precision precision) {
  const auto& peak = gpu.peak_tflops[static_cast<int>(precision)];
  DTSIM_CHECK(peak.has_value(), "precision without a peak reached the compute model");
  return *peak * core::kTera;
}

// Bytes of a GEMM operand element in `precision`.
double element_bytes(config::Precision precision) {
  switch (precision) {
    case config::Precision::fp32:
    case config::Precision::tf32:
      return 4;
    case config::Precision::fp16:
    case config::Precision::bf16:
      return 2;
    case config::Precision::fp8:
      return 1;
  }
  return 2;
}

}  // namespace

ComputeModel::ComputeModel(const config::GpuProfile& gpu, config::Precision precision, double duration_scale)
    : gpu_(&gpu),
      curve_(&gpu.gemm_curve(precision)),
      peak_flops_per_s_(peak_for(gpu, precision)),
      other_curve_(precision == config::Precision::fp8 ? &gpu.gemm_curve(config::Precision::bf16) : curve_),
      other_peak_flops_per_s_(precision == config::Precision::fp8 ? peak_for(gpu, config::Precision::bf16)
                                                                  : peak_flops_per_s_),
      element_bytes_(element_bytes(precision)),
      other_element_bytes_(precision == config::Precision::fp8 ? 2.0 : element_bytes(precision)),
      duration_scale_(duration_scale) {
  for (std::size_t c = 0; c < core::kMemoryClassCount; ++c) {
    memory_bytes_per_s_[c] =
        gpu.hbm_bandwidth_gbytes_per_s * core::kGiga * gpu.memory_efficiency_of(static_cast<core::MemoryClass>(c));
  }
  host_bytes_per_s_ = gpu.host_link_gbytes_per_s * core::kGiga * gpu.host_gather_efficiency;
  DTSIM_CHECK(duration_scale > 0.0, "a compute duration scale must be positive");
}

double ComputeModel::duration_s(const graph::ComputeOp& op) const {
  double flop_time = 0.0;
  const double executed = op.flops * op.executed_fraction;
  switch (op.cls) {
    case graph::ComputeClass::gemm: {
      const double peak = op.linear_layer ? peak_flops_per_s_ : other_peak_flops_per_s_;
      const config::GemmCurve& curve = op.linear_layer ? *curve_ : *other_curve_;
      const double bytes = op.linear_layer ? element_bytes_ : other_element_bytes_;
      const double alignment = op.implicit_gemm ? 1.0 : gemm_alignment(op.gemm, bytes, *gpu_);
      flop_time = executed / (peak * gemm_efficiency(op.gemm, curve, gpu_->sm_count) * alignment);
      break;
    }
    case graph::ComputeClass::attention:
      flop_time = executed / (other_peak_flops_per_s_ * attention_efficiency(op.gemm, *gpu_));
      break;
    case graph::ComputeClass::memory:
    case graph::ComputeClass::optimizer:
      break;
  }
  double memory_time = op.bytes / memory_bytes_per_s_[static_cast<std::size_t>(op.memory)];
  if (op.host_bytes > 0.0) memory_time += op.host_bytes / host_bytes_per_s_;
  return (std::max(flop_time, memory_time) + op.kernels * gpu_->kernel_launch_us * 1e-6) * duration_scale_;
}

core::TimeNs ComputeModel::duration(const graph::ComputeOp& op) const {
  return core::seconds_to_ns(duration_s(op));
}

}  // namespace dtsim::compute
