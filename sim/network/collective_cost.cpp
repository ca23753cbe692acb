#include "network/collective_cost.hpp"

#include <algorithm>

#include "core/errors.hpp"

namespace dtsim::network {

namespace {

// Bandwidth available to one rank of the group for traffic leaving its node.
double inter_share(const graph::CommOp& op, const PathParams& path) {
  const double concurrent = static_cast<double>(std::max<std::int64_t>(1, op.group.concurrent_per_node));
  double share = path.node_inter_bytes_per_s / concurrent;
  if (path.per_flow_bytes_per_s > 0.0) share = std::min(share, path.per_flow_bytes_per_s);
  return share;
}

double ring_bus_bandwidth(const graph::CommOp& op, const PathParams& path) {
  if (op.group.nodes <= 1) return path.intra_bytes_per_s;
  return std::min(path.intra_bytes_per_s, inter_share(op, path));
}

double ring_latency(double steps, double inter_steps, const PathParams& path) {
  return (steps - inter_steps) * path.intra_latency_s + inter_steps * path.inter_latency_s;
}

}  // namespace

double collective_time_s(const graph::CommOp& op, const PathParams& path) {
  const double n = static_cast<double>(op.group.size);
  const double nodes = static_cast<double>(op.group.nodes);
  const double s = op.bytes;
  if (op.group.size <= 1 || s <= 0.0) return 0.0;
  DTSIM_CHECK(op.group.nodes >= 1 && op.group.size % op.group.nodes == 0, "group not spread evenly over nodes");
  const double multi = nodes > 1 ? 1.0 : 0.0;
  switch (op.kind) {
    case graph::CollectiveKind::all_reduce:
      return ring_latency(2 * (n - 1), multi * 2 * (nodes - 1), path) +
             2 * (n - 1) / n * s / ring_bus_bandwidth(op, path);
    case graph::CollectiveKind::all_gather:
    case graph::CollectiveKind::reduce_scatter:
      return ring_latency(n - 1, multi * (nodes - 1), path) + (n - 1) / n * s / ring_bus_bandwidth(op, path);
    case graph::CollectiveKind::broadcast:
    case graph::CollectiveKind::reduce:
      return ring_latency(n - 1, multi * (nodes - 1), path) + s / ring_bus_bandwidth(op, path);
    case graph::CollectiveKind::all_to_all: {
      const double r = n / nodes;
      const double intra_time = (r - 1) / n * s / path.intra_bytes_per_s;
      const double inter_time = nodes > 1 ? (n - r) / n * s / inter_share(op, path) : 0.0;
      const double latency = nodes > 1 ? path.inter_latency_s : path.intra_latency_s;
      return latency + std::max(intra_time, inter_time);
    }
    case graph::CollectiveKind::send_recv:
      if (nodes <= 1) return path.intra_latency_s + s / path.intra_bytes_per_s;
      return path.inter_latency_s + s / inter_share(op, path);
  }
  return 0.0;
}

}  // namespace dtsim::network
