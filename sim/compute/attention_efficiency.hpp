// Efficiency of a fused (flash-style) attention kernel as a function of the work it is given.
//
// A fused attention kernel runs one thread block per (batch, head, 128-row query tile), each looping
// over the keys. With few heads per GPU (tensor parallelism) and a micro-batch of one, the blocks fill
// the SMs for only a few waves, and the causal mask makes their work unequal, so the last wave runs
// part-empty; with short sequences each block's fixed cost (loading its queries, writing its output)
// weighs on a short loop. Both are modelled as saturating:
//
//   waves      = batch * heads * ceil(query_rows / 128) / sm_count
//   efficiency = attention_efficiency * waves / (waves + attention_half_waves)
//                                     * keys / (keys + attention_half_keys)
//
// (a half value of 0 drops its factor). The op's GemmShape carries the work: m = query rows per
// sequence on this rank, n = keys per query row, batch = micro-batch x heads on this rank.
// On an H100 SXM, causal cuDNN attention (head dim 128) measured 0.20 to 0.55 of peak over 1 to 15
// waves and 2k to 16k keys; the form fits the 15 measurements with an rms error of 8%
// (hardware_profiles/gpus/h100-sxm5-80gb.json, its source).
#pragma once

#include "config/hardware.hpp"
#include "graph/ops.hpp"

namespace dtsim::compute {

// Fraction of peak for an attention op of the given work shape on the GPU.
double attention_efficiency(const graph::GemmShape& work, const config::GpuProfile& gpu);

}  // namespace dtsim::compute
