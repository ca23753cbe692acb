// CPU backend of the collective harness: all-reduce, all-gather and reduce-scatter through MPI (Debian's
// Open MPI) over a sweep of message sizes, in the form nccl-tests reports them, so that the same log
// reader and fit (calibration/nccl_log.hpp, fit_network.hpp) turn them into a link profile.
//
// Sizes follow nccl-tests' convention: `size` is the all-reduce buffer, the all-gather output and the
// reduce-scatter input (count = size / 4 floats). Each timed repeat starts after a barrier and lasts
// until the slowest rank returns (the maximum over ranks); results are checked against their known
// values (rank r contributes r + 1 everywhere).
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

#include "calibration/collective_log.hpp"

namespace dtsim::calibration::cpu {

enum class MpiCollective { all_reduce, all_gather, reduce_scatter };

CollectiveName name_of(MpiCollective c);

// Collective over `comm`, called by every rank; returns the timings on every rank.
std::vector<CollectiveTiming> time_collective(MPI_Comm comm, MpiCollective c,
                                              const std::vector<double>& sizes_bytes, int repeats);

}  // namespace dtsim::calibration::cpu
