#include "network/collective_cost.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace dtsim::network {

namespace {

// Bandwidth of the node's NICs available to one group (all its ranks on the node together).
double node_share(const graph::CommOp& op, const PathParams& path,
                  TrafficPattern pattern = TrafficPattern::ring) {
  const double concurrent = static_cast<double>(std::max<std::int64_t>(1, op.group.concurrent_per_node));
  double share = path.node_inter_bytes_per_s / concurrent / fabric_divisor(op.group, path, pattern);
  if (path.per_flow_bytes_per_s > 0.0) share = std::min(share, path.per_flow_bytes_per_s);
  return share;
}

double ring_bus_bandwidth(const graph::CommOp& op, const PathParams& path) {
  if (op.group.nodes <= 1) return path.intra_bytes_per_s;
  return std::min(path.intra_bytes_per_s, node_share(op, path));
}

double ring_latency(double steps, double inter_steps, const PathParams& path) {
  return (steps - inter_steps) * path.intra_latency_s + inter_steps * path.inter_latency_s;
}

CollectiveCost all_reduce(const graph::CommOp& op, const PathParams& path) {
  const double n = static_cast<double>(op.group.size);
  const double nodes = static_cast<double>(op.group.nodes);
  const double r = n / nodes;
  const double s = op.bytes;
  const CollectiveCost ring{ring_latency(2 * (n - 1), nodes > 1 ? 2 * (nodes - 1) : 0.0, path) +
                                2 * (n - 1) / n * s / ring_bus_bandwidth(op, path),
                            Algorithm::ring};
  CollectiveCost best = ring;
  const auto allowed = [&](Algorithm a) { return !path.forced_all_reduce || *path.forced_all_reduce == a; };
  if (path.forced_all_reduce && *path.forced_all_reduce != Algorithm::ring) best.time_s = 1e300;
  if (nodes <= 1 && path.nvls_bytes_per_s > 0.0 && allowed(Algorithm::nvls)) {
    const double t = path.intra_latency_s + 2 * (n - 1) / n * s / path.nvls_bytes_per_s;
    if (t < best.time_s) best = {t, Algorithm::nvls};
  }
  if (nodes > 1 && r > 1 && allowed(Algorithm::hierarchical)) {
    const double intra_bw = path.nvls_bytes_per_s > 0.0 ? path.nvls_bytes_per_s : path.intra_bytes_per_s;
    const double intra = 2 * (r - 1) / r * s / intra_bw;
    const double inter = 2 * (nodes - 1) / nodes * s / node_share(op, path);
    const double latency = 2 * ((r - 1) * path.intra_latency_s + std::log2(nodes) * path.inter_latency_s);
    const double t = latency + std::max(intra, inter);
    if (t < best.time_s) best = {t, Algorithm::hierarchical};
  }
  return best.time_s < 1e300 ? best : ring;  // a forced algorithm that does not apply: the ring
}

}  // namespace

double fabric_divisor(const graph::CommGroup& group, const PathParams& path, TrafficPattern pattern) {
  if (group.nodes <= 1) return 1.0;
  const std::int64_t stride = std::max<std::int64_t>(1, group.node_stride);
  const std::int64_t span = (group.nodes - 1) * stride + 1;
  // One tier: ratio, the nodes under one switch of it, whether the group spans more than that.
  const auto tier = [&](double ratio, std::int64_t nodes_below) {
    if (span <= nodes_below) return 1.0;
    const double members =
        static_cast<double>(std::clamp<std::int64_t>(nodes_below / stride, 1, group.nodes));
    switch (pattern) {
      case TrafficPattern::ring:
        return std::max(1.0, ratio / members);
      case TrafficPattern::all_nodes:
        return ratio;
      case TrafficPattern::all_to_all:
        return std::max(1.0, ratio * (static_cast<double>(group.nodes) - members) /
                                 (static_cast<double>(group.nodes) - 1.0));
    }
    return ratio;
  };
  double divisor = tier(path.leaf_oversubscription, path.nodes_per_leaf);
  if (path.nodes_per_pod > 0) {
    divisor =
        std::max(divisor, tier(path.leaf_oversubscription * path.core_oversubscription, path.nodes_per_pod));
  }
  return divisor;
}

CollectiveCost collective_cost(const graph::CommOp& op, const PathParams& path) {
  const double n = static_cast<double>(op.group.size);
  const double nodes = static_cast<double>(op.group.nodes);
  const double s = op.bytes;
  if (op.group.size <= 1 || s <= 0.0) return {};
  DTSIM_CHECK(op.group.nodes >= 1 && op.group.size % op.group.nodes == 0,
              "group not spread evenly over nodes");
  const double multi = nodes > 1 ? 1.0 : 0.0;
  switch (op.kind) {
    case graph::CollectiveKind::all_reduce:
      return all_reduce(op, path);
    case graph::CollectiveKind::all_gather:
    case graph::CollectiveKind::reduce_scatter:
      return {ring_latency(n - 1, multi * (nodes - 1), path) + (n - 1) / n * s / ring_bus_bandwidth(op, path),
              Algorithm::ring};
    case graph::CollectiveKind::broadcast:
    case graph::CollectiveKind::reduce:
      return {ring_latency(n - 1, multi * (nodes - 1), path) + s / ring_bus_bandwidth(op, path),
              Algorithm::ring};
    case graph::CollectiveKind::all_to_all: {
      const double r = n / nodes;
      const double intra_time = (r - 1) / n * s / path.intra_bytes_per_s;
      // The (n - r)/n of every rank's buffer that leaves the node: r ranks share the node's NICs.
      const double inter_time =
          nodes > 1 ? r * (n - r) / n * s / node_share(op, path, TrafficPattern::all_to_all) : 0.0;
      const double latency = nodes > 1 ? path.inter_latency_s : path.intra_latency_s;
      return {latency + std::max(intra_time, inter_time), Algorithm::direct};
    }
    case graph::CollectiveKind::send_recv:
      if (nodes <= 1) return {path.intra_latency_s + s / path.intra_bytes_per_s, Algorithm::direct};
      return {path.inter_latency_s + s / node_share(op, path, TrafficPattern::all_nodes), Algorithm::direct};
  }
  return {};
}

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::ring:
      return "ring";
    case Algorithm::hierarchical:
      return "hierarchical";
    case Algorithm::nvls:
      return "nvls";
    case Algorithm::direct:
      return "direct";
  }
  return "?";
}

}  // namespace dtsim::network
