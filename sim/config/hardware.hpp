// Hardware profiles, typed. Loaded from hardware_profiles/{gpus,nodes,fabrics}/*.json (schema and
// provenance rule in hardware_profiles/README.md); every value there carries a source.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/memory_class.hpp"

namespace dtsim::config {

enum class Precision { fp32, tf32, fp16, bf16, fp8 };
inline constexpr int kPrecisionCount = 5;

// Parameters of the default GEMM efficiency curve of one GPU generation (see compute/gemm_efficiency.hpp
// for the equation), fitted to the profile's measured GEMMs where it has them.
struct GemmCurve {
  double max_efficiency = 0.0;  // sustained fraction of the dense peak on large, aligned GEMMs
  int tile_m = 0;               // output tile of the dominant kernel (tile quantization)
  int tile_n = 0;
  double k_half = 0.0;              // reduction depth at which the main loop reaches half of max efficiency
  double halving_efficiency = 0.9;  // efficiency kept by a kernel whose tile is half as large
};

// One measured GEMM: C[m x n] = A[m x k] B[k x n] at `tflops` in `precision`.
struct GemmMeasurement {
  std::int64_t m = 0;
  std::int64_t n = 0;
  std::int64_t k = 0;
  Precision precision = Precision::bf16;
  double tflops = 0.0;
};

// A measured fused attention rate (causal, forward and backward combined by their FLOPs) for
// micro-batch x heads problems of one sequence length, as a fraction of the bf16 peak.
struct AttentionMeasurement {
  std::int64_t batch_heads = 0;
  std::int64_t seq = 0;
  double efficiency = 0.0;
};

// Run-to-run spread of a calibrated device: throughput at the 10th and 90th percentile of repeated
// measurements over the median, for GEMMs and for streaming memory kernels (written by dtsim calibrate;
// results carry an iteration-time interval when present).
struct ThroughputSpread {
  double compute_p10 = 1.0;  // <= 1
  double compute_p90 = 1.0;  // >= 1
  double memory_p10 = 1.0;
  double memory_p90 = 1.0;
};

struct GpuProfile {
  std::string id;
  std::string name;
  // Dense (non-sparse) tensor-core peak per precision in TFLOP/s; empty where the GPU has none.
  std::array<std::optional<double>, kPrecisionCount> peak_tflops{};
  double hbm_bytes = 0.0;
  double hbm_bandwidth_gbytes_per_s = 0.0;
  double memory_efficiency = 0.0;  // achievable fraction of HBM bandwidth for streaming kernels
  // The fraction of HBM bandwidth each class of memory-bound kernel reaches (core/memory_class.hpp);
  // empty for a class the profile does not state, which then streams at memory_efficiency.
  std::array<std::optional<double>, core::kMemoryClassCount> memory_class_efficiency{};
  double memory_efficiency_of(core::MemoryClass c) const {
    const auto& e = memory_class_efficiency[static_cast<std::size_t>(c)];
    return e ? *e : memory_efficiency;
  }
  int sm_count = 0;
  GemmCurve gemm;
  // The curve for one precision when it differs (e.g. FP8 kernels), else empty.
  std::array<std::optional<GemmCurve>, kPrecisionCount> gemm_by_precision{};
  // Measurements the curves were fitted to (documentation and tests; may be empty).
  std::vector<GemmMeasurement> gemm_measured;
  // A GEMM with a dimension that is not a whole number of 16-byte vectors runs at this fraction of the
  // aligned rate (cuBLAS's kernels that load one element, or two or four, at a time):
  // gemm_unaligned_odd when a dimension is odd, gemm_unaligned_even otherwise; 1 where not stated.
  double gemm_unaligned_odd = 1.0;
  double gemm_unaligned_even = 1.0;
  const GemmCurve& gemm_curve(Precision p) const {
    const auto& curve = gemm_by_precision[static_cast<int>(p)];
    return curve ? *curve : gemm;
  }
  double attention_efficiency = 0.0;  // fraction of peak reached by attention score/context matmuls
  // Work, in waves of 128-row query tiles over the SMs, at which a fused attention kernel runs at half
  // attention_efficiency (compute/attention_efficiency.hpp); 0: efficiency independent of the work.
  double attention_half_waves = 0.0;
  // Keys per query row at which a fused attention tile's loop runs at half its rate (fixed cost per
  // tile over work per tile); 0: no dependence on the sequence length.
  double attention_half_keys = 0.0;
  // Measurements the attention parameters were fitted to (documentation and tests; may be empty).
  std::vector<AttentionMeasurement> attention_measured;
  // The GPU's link to its host's memory (PCIe), per direction; 0 where the profile states none. Rows of
  // embedding tables kept in host memory are gathered over it at host_gather_efficiency of it
  // (ComputeOp::host_bytes).
  double host_link_gbytes_per_s = 0.0;
  double host_gather_efficiency = 0.0;
  // Whether it states the link (and its gather efficiency), so that tables may live in host memory.
  bool has_host_link() const { return host_link_gbytes_per_s > 0.0 && host_gather_efficiency > 0.0; }
  double kernel_launch_us = 0.0;           // fixed cost per kernel
  double overlap_slowdown = 1.0;           // compute slowdown while a communication kernel runs beside it
  std::optional<ThroughputSpread> spread;  // calibrated profiles only
};

enum class IntraNodeKind { nvswitch, nvlink, pcie, shared_memory };

struct NodeProfile {
  std::string id;
  std::string name;
  std::string gpu;  // GpuProfile id
  int gpus_per_node = 0;
  IntraNodeKind intra_kind = IntraNodeKind::nvswitch;
  double intra_gbytes_per_s = 0.0;  // per GPU, per direction
  double intra_efficiency = 0.0;    // achievable fraction for collectives (NCCL ring bus bandwidth / line)
  double intra_latency_us = 0.0;    // per step of a ring inside the node
  // All-reduce bus bandwidth with NVLink SHARP (in-switch reduction, NVSwitch gen 3+); empty without.
  std::optional<double> nvls_busbw_gbytes_per_s;
  // Run-to-run spread of the collectives the intra-node link was fitted to: bandwidth at the 10th and
  // 90th percentile over the median (calibrated profiles only).
  std::optional<double> intra_bandwidth_p10;
  std::optional<double> intra_bandwidth_p90;
  std::string fabric;     // default FabricProfile id
  double nic_gbps = 0.0;  // default line rate per NIC
  int nics_per_node = 0;  // at most kMaxNicsPerGpu x gpus_per_node
  double host_memory_bytes = 0.0;
  // Physical CPU cores of the node's host (all sockets); absent when the profile's sources do not say.
  // Data-loader workers preprocess on them (config/input_pipeline.hpp).
  std::optional<std::int64_t> host_cpu_cores;
  // A list price of the whole node per hour (profile key "price"), with its source and date; empty for
  // nodes sold rather than rented. Plans cost a cluster from it when their candidate states no price.
  std::optional<double> usd_per_node_hour;
  std::string price_source;
};

// NICs per GPU a node may have (profile or scenario): AWS p5 has 4 (32 EFA NICs for 8 GPUs), DGX
// nodes 1; the flow level splits each transfer over a GPU's NICs, so the bound also bounds its flows.
inline constexpr int kMaxNicsPerGpu = 8;

// What a fitted fabric profile was fitted on (`dtsim import nccl-tests`): the node counts and message
// sizes of the logs. Predictions outside it extrapolate the per-hop model.
struct FittedRange {
  std::int64_t min_nodes = 0;
  std::int64_t max_nodes = 0;
  double min_bytes = 0.0;
  double max_bytes = 0.0;
};

struct FabricProfile {
  std::string id;
  std::string name;
  double efficiency = 0.0;               // achievable fraction of line rate for large collective transfers
  double latency_us = 0.0;               // one-way latency of a network hop (per ring step)
  double per_message_overhead_us = 0.0;  // host/NIC software cost per message
  std::optional<double> per_flow_gbps;   // cap on one flow (kernel TCP); none for RDMA/SRD
  std::optional<FittedRange> fitted_on;  // fitted profiles: the logs' node counts and sizes
};

// Where a prediction for `nodes` nodes and sizes [min_bytes, max_bytes] leaves what `fabric` was
// fitted on, as one sentence ("" when inside it, on one node (no fabric), or when the profile states no
// fitted range).
std::string extrapolation_note(const FabricProfile& fabric, std::int64_t nodes, double min_bytes,
                               double max_bytes);
// The same for the node count alone (a training run's collectives have many sizes).
std::string extrapolation_note(const FabricProfile& fabric, std::int64_t nodes);

}  // namespace dtsim::config
