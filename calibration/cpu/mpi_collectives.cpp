#include "calibration/cpu/mpi_collectives.hpp"

#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::calibration::cpu {

namespace {

void run_once(MPI_Comm comm, MpiCollective c, std::vector<float>& send, std::vector<float>& recv, int count,
              int ranks) {
  switch (c) {
    case MpiCollective::all_reduce:
      MPI_Allreduce(send.data(), recv.data(), count, MPI_FLOAT, MPI_SUM, comm);
      return;
    case MpiCollective::all_gather:
      MPI_Allgather(send.data(), count / ranks, MPI_FLOAT, recv.data(), count / ranks, MPI_FLOAT, comm);
      return;
    case MpiCollective::reduce_scatter:
      MPI_Reduce_scatter_block(send.data(), recv.data(), count / ranks, MPI_FLOAT, MPI_SUM, comm);
      return;
  }
}

void check(MpiCollective c, const std::vector<float>& recv, int count, int ranks) {
  // Rank r sends r + 1: a sum is n(n+1)/2; the gathered block of rank r holds r + 1.
  const float sum = static_cast<float>(ranks * (ranks + 1) / 2);
  const int n = c == MpiCollective::reduce_scatter ? count / ranks : count;
  for (int i = 0; i < n; i += n / 13 + 1) {
    const float expected = c == MpiCollective::all_gather ? static_cast<float>(i / (count / ranks) + 1) : sum;
    if (recv[static_cast<std::size_t>(i)] != expected) {
      throw core::InternalError(fmt::format("{} returned {} at element {} where {} was expected",
                                            program_name(name_of(c)), recv[static_cast<std::size_t>(i)], i,
                                            expected));
    }
  }
}

}  // namespace

CollectiveName name_of(MpiCollective c) {
  switch (c) {
    case MpiCollective::all_reduce:
      return CollectiveName::all_reduce;
    case MpiCollective::all_gather:
      return CollectiveName::all_gather;
    case MpiCollective::reduce_scatter:
      return CollectiveName::reduce_scatter;
  }
  throw core::InternalError("name_of: invalid MpiCollective value");
}

std::vector<CollectiveTiming> time_collective(MPI_Comm comm, MpiCollective c,
                                              const std::vector<double>& sizes_bytes, int repeats) {
  int rank = 0;
  int ranks = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &ranks);
  std::vector<CollectiveTiming> out;
  for (double size : sizes_bytes) {
    int count = static_cast<int>(size / sizeof(float));
    count -= count % ranks;
    const auto n = static_cast<std::size_t>(count);
    std::vector<float> send(n, static_cast<float>(rank + 1));
    std::vector<float> recv(n, 0.0f);
    std::vector<double> samples;
    for (int r = 0; r < repeats + 1; ++r) {
      MPI_Barrier(comm);
      const double start = MPI_Wtime();
      run_once(comm, c, send, recv, count, ranks);
      const double mine = MPI_Wtime() - start;
      double slowest = 0.0;
      MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm);
      if (r > 0) samples.push_back(slowest);  // the first call is a warm-up
    }
    check(c, recv, count, ranks);
    out.push_back(CollectiveTiming{static_cast<double>(n * sizeof(float)), sample_stats(samples)});
  }
  return out;
}

}  // namespace dtsim::calibration::cpu
