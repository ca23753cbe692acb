#include "calibration/cuda/nccl_collectives.hpp"

#include <cuda_runtime.h>

#include <algorithm>

#include "calibration/cuda/cuda_check.hpp"

namespace dtsim::calibration::cuda {

ncclComm_t nccl_world(MPI_Comm comm) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  ncclUniqueId id{};
  if (rank == 0) check(ncclGetUniqueId(&id), "ncclGetUniqueId");
  MPI_Bcast(&id, static_cast<int>(sizeof id), MPI_BYTE, 0, comm);
  ncclComm_t nccl = nullptr;
  check(ncclCommInitRank(&nccl, ranks, id, rank), "ncclCommInitRank");
  return nccl;
}

namespace {

void launch(ncclComm_t nccl, CollectiveName c, const float* send, float* recv, std::size_t count, int rank,
            int ranks, cudaStream_t stream) {
  const std::size_t block = count / static_cast<std::size_t>(ranks);
  switch (c) {
    case CollectiveName::all_reduce:
      check(ncclAllReduce(send, recv, count, ncclFloat, ncclSum, nccl, stream), "ncclAllReduce");
      return;
    case CollectiveName::all_gather:
      check(ncclAllGather(send, recv, block, ncclFloat, nccl, stream), "ncclAllGather");
      return;
    case CollectiveName::reduce_scatter:
      check(ncclReduceScatter(send, recv, block, ncclFloat, ncclSum, nccl, stream), "ncclReduceScatter");
      return;
    case CollectiveName::all_to_all:
      check(ncclGroupStart(), "ncclGroupStart");
      for (int peer = 0; peer < ranks; ++peer) {
        const std::size_t at = static_cast<std::size_t>(peer) * block;
        check(ncclSend(send + at, block, ncclFloat, peer, nccl, stream), "ncclSend");
        check(ncclRecv(recv + at, block, ncclFloat, peer, nccl, stream), "ncclRecv");
      }
      check(ncclGroupEnd(), "ncclGroupEnd");
      return;
    case CollectiveName::send_recv: {
      const int peer = rank ^ 1;
      if (peer >= ranks) return;  // odd rank count: the last rank idles
      check(ncclGroupStart(), "ncclGroupStart");
      check(ncclSend(send, count, ncclFloat, peer, nccl, stream), "ncclSend");
      check(ncclRecv(recv, count, ncclFloat, peer, nccl, stream), "ncclRecv");
      check(ncclGroupEnd(), "ncclGroupEnd");
      return;
    }
  }
}

// The value element i of the result must hold (rank r contributes r + 1 everywhere).
float expected(CollectiveName c, std::size_t i, std::size_t block, int rank, int ranks) {
  switch (c) {
    case CollectiveName::all_reduce:
    case CollectiveName::reduce_scatter:
      return static_cast<float>(ranks * (ranks + 1) / 2);
    case CollectiveName::all_gather:
    case CollectiveName::all_to_all:
      return static_cast<float>(i / block + 1);
    case CollectiveName::send_recv:
      return static_cast<float>((rank ^ 1) + 1);
  }
  return 0.0f;
}

}  // namespace

std::vector<CollectiveTiming> time_nccl(MPI_Comm comm, ncclComm_t nccl, CollectiveName c,
                                        const std::vector<double>& sizes_bytes, int repeats) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  cudaStream_t stream = nullptr;
  cudaEvent_t start = nullptr;
  cudaEvent_t stop = nullptr;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<CollectiveTiming> out;
  for (double size : sizes_bytes) {
    std::size_t count = static_cast<std::size_t>(size / sizeof(float));
    count -= count % static_cast<std::size_t>(ranks);
    if (count == 0) continue;
    const std::size_t block = count / static_cast<std::size_t>(ranks);
    const std::vector<float> host(count, static_cast<float>(rank + 1));
    float* send = nullptr;
    float* recv = nullptr;
    check(cudaMalloc(&send, count * sizeof(float)), "cudaMalloc");
    check(cudaMalloc(&recv, count * sizeof(float)), "cudaMalloc");
    check(cudaMemcpy(send, host.data(), count * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    std::vector<double> samples;
    for (int r = 0; r < repeats + 1; ++r) {
      MPI_Barrier(comm);
      check(cudaEventRecord(start, stream), "cudaEventRecord");
      launch(nccl, c, send, recv, count, rank, ranks, stream);
      check(cudaEventRecord(stop, stream), "cudaEventRecord");
      check(cudaEventSynchronize(stop), "collective");
      float ms = 0.0f;
      check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
      const double mine = ms * 1e-3;
      double slowest = 0.0;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (r > 0) samples.push_back(slowest);
    }
    const std::size_t checked = c == CollectiveName::reduce_scatter ? block : count;
    const bool idle = c == CollectiveName::send_recv && (rank ^ 1) >= ranks;
    for (std::size_t i = 0; i < checked && !idle; i += checked / 11 + 1) {
      float value = 0.0f;
      check(cudaMemcpy(&value, recv + i, sizeof(float), cudaMemcpyDeviceToHost), "cudaMemcpy");
      if (value != expected(c, i, block, rank, ranks)) {
        throw core::InternalError(fmt::format("{} returned {} at element {} on rank {} where {} was expected",
                                              program_name(c), value, i, rank,
                                              expected(c, i, block, rank, ranks)));
      }
    }
    cudaFree(send);
    cudaFree(recv);
    out.push_back(CollectiveTiming{static_cast<double>(count * sizeof(float)), sample_stats(samples)});
  }
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  return out;
}

}  // namespace dtsim::calibration::cuda
