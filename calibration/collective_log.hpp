// Collective timings written as nccl-tests output (the format calibration/nccl_log.hpp reads), so the
// harnesses' sweeps go through the same reader and fit as logs from the field (dtsim import
// nccl-tests). Bus bandwidth uses nccl-tests' factors (doc/PERFORMANCE.md in NVIDIA/nccl-tests):
// all-reduce 2(n-1)/n; all-gather, reduce-scatter and all-to-all (n-1)/n; send/recv 1.
#pragma once

#include <string>
#include <vector>

#include "calibration/sample_stats.hpp"

namespace dtsim::calibration {

struct CollectiveTiming {
  double size_bytes = 0.0;
  SampleStats seconds;  // over repeats, each the maximum over ranks
};

enum class CollectiveName { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };

const char* program_name(CollectiveName c);  // nccl-tests program: "all_reduce_perf", ...
double bus_bandwidth_factor(CollectiveName c, int ranks);

// Header and one row per size (median time; in-place columns repeat the out-of-place ones).
std::string nccl_tests_log(CollectiveName c, int ranks, const std::string& origin,
                           const std::vector<CollectiveTiming>& rows);

}  // namespace dtsim::calibration
