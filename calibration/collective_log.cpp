#include "calibration/collective_log.hpp"

#include <cstdint>

#include <fmt/format.h>

#include "core/errors.hpp"

namespace dtsim::calibration {

const char* program_name(CollectiveName c) {
  switch (c) {
    case CollectiveName::all_reduce:
      return "all_reduce_perf";
    case CollectiveName::all_gather:
      return "all_gather_perf";
    case CollectiveName::reduce_scatter:
      return "reduce_scatter_perf";
    case CollectiveName::all_to_all:
      return "alltoall_perf";
    case CollectiveName::send_recv:
      return "sendrecv_perf";
  }
  throw core::InternalError("program_name: invalid CollectiveName value");
}

double bus_bandwidth_factor(CollectiveName c, int ranks) {
  const double n = ranks;
  switch (c) {
    case CollectiveName::all_reduce:
      return 2.0 * (n - 1) / n;
    case CollectiveName::all_gather:
    case CollectiveName::reduce_scatter:
    case CollectiveName::all_to_all:
      return (n - 1) / n;
    case CollectiveName::send_recv:
      return 1.0;
  }
  throw core::InternalError("bus_bandwidth_factor: invalid CollectiveName value");
}

std::string nccl_tests_log(CollectiveName c, int ranks, const std::string& origin,
                           const std::vector<CollectiveTiming>& rows) {
  const double factor = bus_bandwidth_factor(c, ranks);
  std::string text = fmt::format("# {} ({} ranks), written by {}\n", program_name(c), ranks, origin);
  text +=
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw "
      "  "
      "busbw #wrong\n";
  const bool reduces = c == CollectiveName::all_reduce || c == CollectiveName::reduce_scatter;
  for (const auto& row : rows) {
    const double us = row.seconds.median * 1e6;
    const double algbw = row.size_bytes / row.seconds.median / 1e9;
    text += fmt::format(
        "{:>12.0f} {:>13d} {:>9} {:>7} {:>7} {:>8.2f} {:>7.2f} {:>7.2f} {:>6} {:>8.2f} {:>7.2f} {:>7.2f} "
        "{:>6}\n",
        row.size_bytes, static_cast<std::int64_t>(row.size_bytes / 4), "float", reduces ? "sum" : "none", -1,
        us, algbw, algbw * factor, 0, us, algbw, algbw * factor, 0);
  }
  return text;
}

}  // namespace dtsim::calibration
