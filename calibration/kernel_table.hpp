// Per-kernel durations of a PyTorch profiler (Kineto) trace, mapped to operator classes, and the GEMM
// throughput table they imply.
//
// Classes, by kernel name (case-insensitive substrings, first match wins): nccl ("nccl"); attention
// ("flash", "fmha", "attention", "sdpa"); gemm ("gemm", "nvjet", "cutlass", "xmma", "cublas");
// normalization and reduction ("norm", "softmax", "reduce"); elementwise ("elementwise", "copy", "fill",
// "cat", "index"); memory copies and sets (Kineto cat gpu_memcpy / gpu_memset); other.
//
// GEMM table: a kernel launched by aten::mm ([m, k] x [k, n]), aten::addmm (bias, [m, k], [k, n]) or
// aten::bmm ([b, m, k] x [b, k, n]) — linked by args "External id" — gives m, n, k (and batch) from
// the operator's "Input Dims"; its throughput is 2 b m n k / (sum of the durations of the op's GEMM
// kernels). The precision comes from "Input type" (float -> fp32, c10::Half -> fp16, c10::BFloat16 ->
// bf16, c10::Float8_e4m3fn -> fp8). Rows of one shape and precision are merged (median throughput).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "calibration/sample_stats.hpp"
#include "config/hardware.hpp"
#include "config/kineto_reader.hpp"

namespace dtsim::calibration {

enum class OperatorClass { gemm, attention, nccl, normalization, elementwise, memory_copy, other };
inline constexpr int kOperatorClasses = 7;

const char* to_string(OperatorClass c);
OperatorClass classify_kernel(const std::string& name, config::GpuActivity activity);

struct KernelRow {
  std::string name;
  OperatorClass cls = OperatorClass::other;
  SampleStats duration_us;
  double total_us = 0.0;
};

struct ClassRow {
  OperatorClass cls = OperatorClass::other;
  int kernels = 0;
  double total_us = 0.0;
  double share = 0.0;  // of all GPU activity time
};

struct KernelTable {
  std::string file;
  double total_us = 0.0;
  std::vector<ClassRow> classes;                       // every class with at least one kernel, in enum order
  std::vector<KernelRow> kernels;                      // by total time, largest first (ties by name)
  std::vector<config::GemmMeasurement> gemm_measured;  // sorted by (precision, m, n, k)
  int gemm_ops_without_shape = 0;                      // GEMM kernels whose operator gave no usable shape
};

KernelTable kernel_table(const config::KinetoTrace& trace);

}  // namespace dtsim::calibration
