// What NVIDIA's nccl-tests would print for a collective on a modeled cluster: for each message size,
// the time and the algorithm and bus bandwidths with nccl-tests' own definitions
// (nccl-tests doc/PERFORMANCE.md): algbw = S / t (GB = 1e9 B), busbw = algbw x factor with
//   all_reduce 2(n-1)/n; all_gather, reduce_scatter, all_to_all (n-1)/n; broadcast, reduce 1.
// S is the size column: the buffer for all_reduce/broadcast/reduce, the whole gathered or scattered
// array for all_gather/reduce_scatter, count x n x type size for all_to_all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graph/ops.hpp"
#include "network/network_model.hpp"

namespace dtsim::network {

struct NcclTestsRow {
  double size_bytes = 0.0;
  std::int64_t count = 0;  // elements
  double time_us = 0.0;
  double algbw_gbps = 0.0;  // GB/s (1e9 bytes), as nccl-tests prints it
  double busbw_gbps = 0.0;
};

double bus_factor(graph::CollectiveKind kind, std::int64_t ranks);

// Sizes from min to max (inclusive), multiplying by `factor`, as nccl-tests' -b/-e/-f do; each size
// rounded down to a whole number of elements of `type_bytes`.
std::vector<double> nccl_tests_sizes(double min_bytes, double max_bytes, double factor, double type_bytes);

std::vector<NcclTestsRow> predict_nccl_tests(const NetworkModel& model, graph::CollectiveKind kind,
                                             const graph::CommGroup& group, const std::vector<double>& sizes,
                                             double type_bytes);

}  // namespace dtsim::network
