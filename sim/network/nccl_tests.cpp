#include "network/nccl_tests.hpp"

#include <cmath>

#include "core/units.hpp"

namespace dtsim::network {

double bus_factor(graph::CollectiveKind kind, std::int64_t ranks) {
  const double n = static_cast<double>(ranks);
  switch (kind) {
    case graph::CollectiveKind::all_reduce:
      return 2 * (n - 1) / n;
    case graph::CollectiveKind::all_gather:
    case graph::CollectiveKind::reduce_scatter:
    case graph::CollectiveKind::all_to_all:
      return (n - 1) / n;
    case graph::CollectiveKind::broadcast:
    case graph::CollectiveKind::reduce:
    case graph::CollectiveKind::send_recv:
      return 1.0;
  }
  return 1.0;
}

std::vector<double> nccl_tests_sizes(double min_bytes, double max_bytes, double factor, double type_bytes) {
  std::vector<double> sizes;
  for (double s = min_bytes; s <= max_bytes * (1 + 1e-12); s *= factor) {
    sizes.push_back(std::floor(s / type_bytes) * type_bytes);
    if (factor <= 1.0) break;
  }
  return sizes;
}

std::vector<NcclTestsRow> predict_nccl_tests(const NetworkModel& model, graph::CollectiveKind kind,
                                             const graph::CommGroup& group, const std::vector<double>& sizes,
                                             double type_bytes) {
  std::vector<NcclTestsRow> rows;
  const double factor = bus_factor(kind, group.size);
  for (const double size : sizes) {
    NcclTestsRow row;
    row.size_bytes = size;
    const bool whole_array = kind == graph::CollectiveKind::all_gather ||
                             kind == graph::CollectiveKind::reduce_scatter ||
                             kind == graph::CollectiveKind::all_to_all;
    row.count =
        static_cast<std::int64_t>(size / type_bytes / (whole_array ? static_cast<double>(group.size) : 1.0));
    const double seconds = core::ns_to_seconds(model.duration(graph::CommOp{kind, size, group}));
    row.time_us = seconds * 1e6;
    row.algbw_gbps = seconds > 0 ? size / seconds / core::kGiga : 0.0;
    row.busbw_gbps = row.algbw_gbps * factor;
    rows.push_back(row);
  }
  return rows;
}

}  // namespace dtsim::network
