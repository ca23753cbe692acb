// NCCL collectives of the CUDA harness over all MPI ranks (one GPU per rank; launch with mpirun or
// srun, one rank per GPU, across nodes for the network): all-reduce, all-gather, reduce-scatter,
// all-to-all (grouped ncclSend/ncclRecv) and send/recv (ranks paired r <-> r ^ 1), over message sizes,
// in nccl-tests' size convention (collective_log.hpp). Each repeat is timed with CUDA events and the
// slowest rank's time kept; results are checked (rank r contributes r + 1).
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <vector>

#include "calibration/collective_log.hpp"

namespace dtsim::calibration::cuda {

// Creates the NCCL communicator of MPI_COMM_WORLD (rank 0's unique id broadcast over MPI).
ncclComm_t nccl_world(MPI_Comm comm);

std::vector<CollectiveTiming> time_nccl(MPI_Comm comm, ncclComm_t nccl, CollectiveName c,
                                        const std::vector<double>& sizes_bytes, int repeats);

}  // namespace dtsim::calibration::cuda
