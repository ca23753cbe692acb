// Efficiency of a fused (flash-style) attention kernel as a function of the work it is given.
//
// A fused attention kernel runs one thread block per (batch, head, 128-row query tile). With few heads
// per GPU (tensor parallelism) and a micro-batch of one, the blocks fill the SMs for only a few waves,
// and the causal mask makes their work unequal (a tile's keys grow with its row), so the last wave runs
// part-empty. The fraction of the kernel's best rate reached is modelled as saturating in the waves:
//
//   waves      = batch * heads * ceil(query_rows / 128) / sm_count
//   efficiency = attention_efficiency * waves / (waves + attention_half_waves)
//
// (attention_half_waves = 0: the profile's attention_efficiency for any shape). The op's GemmShape
// carries the work: m = query rows per sequence on this rank, batch = micro-batch x heads on this rank.
// On an H100 SXM, causal cuDNN attention (head dim 128, sequence 4096) measured 0.24, 0.37, 0.39-0.40
// and 0.45 of peak with 8, 12, 16 and 32 heads (hardware_profiles/gpus/h100-sxm5-80gb.json, its
// source), and the FlashAttention-3 paper's cuDNN curve 0.51 at 64: the form fits these within 15%.
#pragma once

#include "config/hardware.hpp"
#include "graph/ops.hpp"

namespace dtsim::compute {

// Fraction of peak for an attention op of the given work shape on the GPU.
double attention_efficiency(const graph::GemmShape& work, const config::GpuProfile& gpu);

}  // namespace dtsim::compute
