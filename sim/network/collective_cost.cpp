#include "network/collective_cost.hpp"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/errors.hpp"

namespace dtsim::network {

namespace {

// Bandwidth of the node's NICs available to one group (all its ranks on the node together): the slower of
// its slowest NIC and the switch tiers' share, which do not compound (a group moves at its slowest
// link's pace, and a slow NIC puts that much less on the uplinks).
double node_share(const graph::CommOp& op, const PathParams& path,
                  TrafficPattern pattern = TrafficPattern::ring) {
  const double concurrent = static_cast<double>(std::max<std::int64_t>(1, op.group.concurrent_per_node));
  double share = path.node_inter_bytes_per_s *
                 std::min(op.group.nic_speed, 1.0 / fabric_divisor(op.group, path, pattern)) / concurrent;
  if (path.per_flow_bytes_per_s > 0.0) share = std::min(share, path.per_flow_bytes_per_s);
  return share;
}

double ring_bus_bandwidth(const graph::CommOp& op, const PathParams& path) {
  if (op.group.nodes <= 1) return path.intra_bytes_per_s;
  return std::min(path.intra_bytes_per_s, node_share(op, path));
}

bool is_power_of_two(std::int64_t v) { return v > 0 && (v & (v - 1)) == 0; }

bool protocol_applies(Algorithm a, Protocol p, const PathParams& path) {
  if (a == Algorithm::nvls) return p == Protocol::simple;
  return p != Protocol::ll128 || path.ll128;
}

// The protocols to try: the forced one where it applies, else Simple; all applicable ones otherwise.
std::vector<Protocol> protocols_for(Algorithm a, const PathParams& path) {
  if (path.forced_protocol) {
    return {protocol_applies(a, *path.forced_protocol, path) ? *path.forced_protocol : Protocol::simple};
  }
  std::vector<Protocol> out;
  for (const Protocol p : {Protocol::ll, Protocol::ll128, Protocol::simple}) {
    if (protocol_applies(a, p, path)) out.push_back(p);
  }
  return out;
}

// `bw` under protocol `p`: its fraction of Simple's, and LL's cap across nodes (nccl_protocol.hpp).
double protocol_rate(double bw, AlgorithmFamily family, Protocol p, std::int64_t nodes) {
  const double rate = bw * protocol_bandwidth_fraction(family, p);
  return p == Protocol::ll ? std::min(rate, nccl_ll_max_bytes_per_s(nodes)) : rate;
}

// Ring of `steps` steps of which `inter_steps` cross nodes, moving `bus_bytes` per rank at `rate`
// (the protocol's), NCCL's base latency included.
double ring_time(double steps, double inter_steps, double bus_bytes, double rate, const HopLatencies& hop,
                 Protocol p) {
  const double hops = (steps - inter_steps) * hop.intra_s + inter_steps * hop.inter_s;
  return nccl_base_latency_us(AlgorithmFamily::ring, p) * 1e-6 + hops + bus_bytes / rate;
}

// Time of `a` under `p` for an all-reduce; negative when `a` does not apply to the group.
double all_reduce_time(const graph::CommOp& op, const PathParams& path, Algorithm a, Protocol p) {
  const double n = static_cast<double>(op.group.size);
  const double nodes = static_cast<double>(op.group.nodes);
  const double r = static_cast<double>(op.group.ranks_per_node());  // on the busiest node
  const double s = op.bytes;
  const HopLatencies hop = hop_latencies(path, a, p, r <= 1.0);
  const auto rate = [&](double bw) { return protocol_rate(bw, family_of(a), p, op.group.nodes); };
  switch (a) {
    case Algorithm::ring:
      return ring_time(2 * (n - 1), nodes > 1 ? 2 * (nodes - 1) : 0.0, 2 * (n - 1) / n * s,
                       rate(ring_bus_bandwidth(op, path)), hop, p);
    case Algorithm::nvls:
      if (nodes > 1 || path.nvls_bytes_per_s <= 0.0) return -1.0;
      return hop.intra_s + 2 * (n - 1) / n * s / path.nvls_bytes_per_s;
    case Algorithm::tree:
    case Algorithm::hierarchical: {
      if (nodes <= 1 || r <= 1) return -1.0;
      // NVLink SHARP inside the node (NCCL's NVLS-tree) runs Simple only.
      const bool nvls = path.nvls_bytes_per_s > 0.0 && p == Protocol::simple;
      const double intra_bw = nvls ? path.nvls_bytes_per_s : path.intra_bytes_per_s;
      const double intra = 2 * (r - 1) / r * s / rate(intra_bw);
      const double inter_rate = rate(node_share(op, path));
      const double inter = tree_inter_bytes(a, nodes, s) / inter_rate;
      const double net_hops = 2 * (a == Algorithm::tree ? std::log2(nodes) : nodes - 1);
      const double pace = std::max(intra, inter);
      const double fill = pipeline_fill_s(pace, net_hops * hop.inter_s, net_hops, kPipelineChunkBytes / inter_rate);
      return nccl_base_latency_us(AlgorithmFamily::tree, p) * 1e-6 + 2 * (r - 1) * hop.intra_s +
             net_hops * hop.inter_s + pace + fill;
    }
    case Algorithm::halving_doubling: {
      if (!is_power_of_two(op.group.size) || !is_power_of_two(op.group.nodes) || op.group.uneven) return -1.0;
      const double intra = 2 * (r - 1) / r * s / rate(path.intra_bytes_per_s);
      const double inter = nodes > 1 ? 2 * (nodes - 1) / nodes * s / rate(node_share(op, path)) : 0.0;
      return nccl_base_latency_us(AlgorithmFamily::ring, p) * 1e-6 +
             2 * (std::log2(r) * hop.intra_s + std::log2(nodes) * hop.inter_s) + intra + inter;
    }
    case Algorithm::direct:
      return -1.0;
  }
  return -1.0;
}

CollectiveCost all_reduce(const graph::CommOp& op, const PathParams& path) {
  // NCCL's algorithms (ties keep the first); the others only when forced.
  std::vector<Algorithm> candidates{Algorithm::ring, Algorithm::tree, Algorithm::nvls};
  if (path.forced_all_reduce) candidates = {*path.forced_all_reduce};
  CollectiveCost best{-1.0, Algorithm::ring, Protocol::simple};
  for (const Algorithm a : candidates) {
    for (const Protocol p : protocols_for(a, path)) {
      const double t = all_reduce_time(op, path, a, p);
      if (t >= 0.0 && (best.time_s < 0.0 || t < best.time_s)) best = {t, a, p};
    }
  }
  if (best.time_s >= 0.0) return best;
  // A forced algorithm that does not apply: the ring.
  for (const Protocol p : protocols_for(Algorithm::ring, path)) {
    const double t = all_reduce_time(op, path, Algorithm::ring, p);
    if (best.time_s < 0.0 || t < best.time_s) best = {t, Algorithm::ring, p};
  }
  return best;
}

// all_gather, reduce_scatter (pipelined = false) or broadcast, reduce (true): the ring under the
// fastest protocol.
CollectiveCost ring_collective(const graph::CommOp& op, const PathParams& path, bool pipelined) {
  const double n = static_cast<double>(op.group.size);
  const double nodes = static_cast<double>(op.group.nodes);
  const double bus_bytes = pipelined ? op.bytes : (n - 1) / n * op.bytes;
  CollectiveCost best{-1.0, Algorithm::ring, Protocol::simple};
  for (const Protocol p : protocols_for(Algorithm::ring, path)) {
    const HopLatencies hop = hop_latencies(path, Algorithm::ring, p, op.group.nodes == op.group.size);
    const double rate = protocol_rate(ring_bus_bandwidth(op, path), AlgorithmFamily::ring, p, op.group.nodes);
    double t = ring_time(n - 1, nodes > 1 ? nodes - 1 : 0.0, bus_bytes, rate, hop, p);
    if (pipelined) {  // a chain of n - 1 stages
      const double inter_steps = nodes > 1 ? nodes - 1 : 0.0;
      const double chain_latency = (n - 1 - inter_steps) * hop.intra_s + inter_steps * hop.inter_s;
      t += pipeline_fill_s(bus_bytes / rate, chain_latency, n - 1, kPipelineChunkBytes / rate);
    }
    if (best.time_s < 0.0 || t < best.time_s) best = {t, Algorithm::ring, p};
  }
  return best;
}

}  // namespace

double tree_inter_bytes(Algorithm a, double nodes, double bytes) {
  if (a == Algorithm::hierarchical) return 2 * (nodes - 1) / nodes * bytes;
  return nodes <= 2 ? bytes : 2 * bytes;
}

double pipeline_fill_s(double pace_s, double net_latency_s, double net_stages, double chunk_s) {
  if (pace_s <= 0.0 || net_latency_s <= 0.0) return 0.0;
  return std::min(2 * std::sqrt(pace_s * net_latency_s), 2 * net_stages * chunk_s);
}

AlgorithmFamily family_of(Algorithm a) {
  return a == Algorithm::tree || a == Algorithm::hierarchical ? AlgorithmFamily::tree : AlgorithmFamily::ring;
}

HopLatencies hop_latencies(const PathParams& path, Algorithm algorithm, Protocol protocol,
                           bool one_per_node) {
  const AlgorithmFamily family = family_of(algorithm);
  return {protocol_hop_latency_s(path.intra_latency_s, path.intra_hop, family, protocol),
          protocol_hop_latency_s(path.inter_latency_s, HopClass::net,
                                 one_per_node ? AlgorithmFamily::tree : family, protocol)};
}

double fabric_divisor(const graph::CommGroup& group, const PathParams& path, TrafficPattern pattern) {
  if (group.nodes <= 1) return 1.0;
  const std::int64_t stride = std::max<std::int64_t>(1, group.node_stride);
  const std::int64_t span = (group.nodes - 1) * stride + 1;
  // One tier: ratio, the nodes under one switch of it, whether the group crosses it.
  const auto tier = [&](double ratio, std::int64_t nodes_below, bool crosses) {
    if (!crosses) return 1.0;
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
  // A group with a degraded leaf uplink crosses the leaf tier whatever its span (its layout sets the
  // factor only when its nodes are under several leaves).
  const double leaf_ratio = path.leaf_oversubscription / group.uplink_speed;
  double divisor =
      tier(leaf_ratio, path.nodes_per_leaf, span > path.nodes_per_leaf || group.uplink_speed < 1.0);
  if (path.nodes_per_pod > 0) {
    divisor = std::max(divisor, tier(leaf_ratio * path.core_oversubscription, path.nodes_per_pod,
                                     span > path.nodes_per_pod));
  }
  return divisor;
}

CollectiveCost collective_cost(const graph::CommOp& op, const PathParams& path) {
  // A degraded NVLink on one of the group's nodes (cluster.speed_factors): its intra-node bandwidths at
  // that fraction, NVLink SHARP's included; latencies stay.
  if (op.group.nvlink_speed != 1.0) {
    PathParams slower = path;
    slower.intra_bytes_per_s *= op.group.nvlink_speed;
    slower.nvls_bytes_per_s *= op.group.nvlink_speed;
    graph::CommOp plain = op;
    plain.group.nvlink_speed = 1.0;
    return collective_cost(plain, slower);
  }
  const double n = static_cast<double>(op.group.size);
  const double nodes = static_cast<double>(op.group.nodes);
  const double s = op.bytes;
  if (op.group.size <= 1 || s <= 0.0) return {};
  DTSIM_CHECK(op.group.nodes >= 1 && op.group.ranks_per_node() * op.group.nodes >= op.group.size &&
                  op.group.fewest_per_node() * op.group.nodes <= op.group.size,
              "a group's members per node do not add up to its size");
  switch (op.kind) {
    case graph::CollectiveKind::all_reduce:
      return all_reduce(op, path);
    case graph::CollectiveKind::all_gather:
    case graph::CollectiveKind::reduce_scatter:
      return ring_collective(op, path, false);
    case graph::CollectiveKind::broadcast:
    case graph::CollectiveKind::reduce:
      return ring_collective(op, path, true);
    case graph::CollectiveKind::all_to_all: {
      const double most = static_cast<double>(op.group.ranks_per_node());
      const double fewest = static_cast<double>(op.group.fewest_per_node());
      // The (n - r)/n of every rank's buffer that leaves the node: its r ranks share the node's NICs;
      // with an uneven group, the node of the most or of the fewest members, whichever sends more.
      // Node-aware, the fraction f of it crosses, and each GPU forwards over NVLink to its node's other
      // GPUs the copies for their experts among what arrives, as many as the all-to-all would have sent
      // them: (r - 1)/r of (n - r)/n s, beside its own copies inside the node.
      // DeepEP sends each token once per destination GPU: the fraction g of the copies inside the node.
      const double f = op.node_aware.value_or(1.0);
      const double g = op.gpu_copies.value_or(1.0);
      const double forwarded = op.node_aware ? (n - most) / n * s * (most - 1) / most : 0.0;
      const double intra_time = g * ((most - 1) / n * s + forwarded) / path.intra_bytes_per_s;
      const double leaving = f * std::max(most * (n - most), fewest * (n - fewest)) / n * s;
      const double inter_time = nodes > 1 ? leaving / node_share(op, path, TrafficPattern::all_to_all) : 0.0;
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
    case Algorithm::tree:
      return "tree";
    case Algorithm::hierarchical:
      return "hierarchical";
    case Algorithm::halving_doubling:
      return "halving_doubling";
    case Algorithm::nvls:
      return "nvls";
    case Algorithm::direct:
      return "direct";
  }
  return "?";
}

}  // namespace dtsim::network
