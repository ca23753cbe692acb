// GEMM efficiency model of one GPU generation: every GEMM is costed with it. A profile with measured
// GEMMs (gemm.measured, written by dtsim calibrate or copied from published benchmarks) carries the curve
// fitted to them; the measurements themselves are not looked up, because they mix short boost-clock
// bursts with sustained rates (see the profiles' sources) and the fit averages over them.
//
// A GEMM C[m x n] = A[m x k] B[k x n] (x batch) runs as output tiles spread over the SMs in waves.
// For a candidate tile (tm, tn), with T = ceil(m/tm) * ceil(n/tn) * batch tiles on S SMs:
//
//   tile quantization   q_tile = (m * n) / (ceil(m/tm) * tm * ceil(n/tn) * tn)
//   wave quantization   q_wave = T / (ceil(T / S) * S)
//   main-loop depth     q_k    = k / (k + k_half)
//   tile size           q_size = halving_efficiency ^ (number of halvings from the profile's tile)
//
//   efficiency = max_efficiency * max over candidate tiles of (q_tile * q_wave * q_size) * q_k
//
// Candidates are the profile's (tile_m, tile_n) and its halvings down to 64 x 64, as cuBLAS heuristics
// choose smaller tiles for small or awkward shapes. Tile and wave quantization follow NVIDIA's "Matrix
// Multiplication Background User's Guide" (Deep Learning Performance docs). max_efficiency, k_half and
// halving_efficiency are fitted per GPU (and per precision where kernels differ) to measured cuBLASLt
// throughput; the profile carries the measurements and the fit's source.
#pragma once

#include "config/hardware.hpp"
#include "graph/ops.hpp"

namespace dtsim::compute {

double gemm_efficiency(const graph::GemmShape& shape, const config::GemmCurve& curve, int sm_count);

// The rate of a GEMM on elements of `element_bytes` relative to the same GEMM aligned: 1 when m, n and
// k are each a whole number of 16-byte vectors (a multiple of 8 BF16 elements), else the profile's
// gemm_unaligned_odd (some dimension odd) or gemm_unaligned_even. Which dimension is a leading one
// depends on the layout; any unaligned dimension counts (the tokens of a micro-batch, never a leading
// dimension of a linear layer's operands, are a multiple of 8 in practice).
double gemm_alignment(const graph::GemmShape& shape, double element_bytes, const config::GpuProfile& gpu);

}  // namespace dtsim::compute
