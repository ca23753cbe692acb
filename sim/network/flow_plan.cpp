#include "network/flow_plan.hpp"

#include <algorithm>
#include <cmath>

#include "core/errors.hpp"

namespace dtsim::network {

namespace {

struct Member {
  std::int64_t node = 0;
  std::int64_t gpu = 0;
};

struct GroupPlacement {
  std::vector<std::int64_t> nodes;
  std::vector<std::int64_t> locals;
};

// Members placed on each node of a group (see the header).
std::int64_t placed_per_node(const graph::CommGroup& g, const TopologyShape& shape) {
  if (!g.uneven) return g.ranks_per_node();
  const std::int64_t c = std::max<std::int64_t>(1, g.concurrent_per_node);
  return std::clamp<std::int64_t>(shape.gpus_per_node / c, 1, g.ranks_per_node());
}

std::vector<GroupPlacement> place_groups(const graph::CommGroup& g, const TopologyShape& shape) {
  const std::int64_t n_nodes = g.nodes;
  const std::int64_t r = placed_per_node(g, shape);
  const std::int64_t c = std::max<std::int64_t>(1, g.concurrent_per_node);
  const std::int64_t stride = n_nodes > 1 ? std::max<std::int64_t>(1, g.node_stride) : 1;
  const std::int64_t period = stride * n_nodes;
  const std::int64_t span = (n_nodes - 1) * stride + 1;
  DTSIM_CHECK(span <= shape.nodes, "a communication group spans more nodes than the cluster has");
  DTSIM_CHECK(r * c <= shape.gpus_per_node || c == 1, "groups placed beyond a node's GPUs");
  // One node's groups stand for all when they stay inside it. Blocks of `period` nodes; a group whose
  // nodes are spread out (a pipeline transfer two nodes apart) may leave part of the last block empty.
  const std::int64_t periods = n_nodes > 1 ? std::max<std::int64_t>(1, shape.nodes / period) : 1;
  std::vector<GroupPlacement> groups;
  for (std::int64_t p = 0; p < periods; ++p) {
    for (std::int64_t o = 0; o < (n_nodes > 1 ? stride : 1); ++o) {
      if (p * period + o + span > shape.nodes) continue;
      for (std::int64_t j = 0; j < c && j + (r - 1) * c < shape.gpus_per_node; ++j) {
        GroupPlacement placement;
        for (std::int64_t k = 0; k < n_nodes; ++k) placement.nodes.push_back(p * period + o + k * stride);
        for (std::int64_t i = 0; i < r; ++i) placement.locals.push_back(j + i * c);
        groups.push_back(std::move(placement));
      }
    }
  }
  return groups;
}

// Rings over `nodes` x `locals` with `channels` channels, each rank sending `bytes` per channel.
void add_rings(const std::vector<std::int64_t>& nodes, const std::vector<std::int64_t>& locals,
               std::int64_t channels, double bytes, double rate_cap, std::vector<Transfer>& out) {
  const auto r = static_cast<std::int64_t>(locals.size());
  for (std::int64_t k = 0; k < channels; ++k) {
    std::vector<std::int64_t> rotated;
    for (std::int64_t i = 0; i < r; ++i)
      rotated.push_back(locals[static_cast<std::size_t>((k * r / channels + i) % r)]);
    std::vector<Member> ring;
    for (std::size_t a = 0; a < nodes.size(); ++a) {
      if (a % 2 == 0) {
        for (const std::int64_t l : rotated) ring.push_back({nodes[a], l});
      } else {
        for (auto it = rotated.rbegin(); it != rotated.rend(); ++it) ring.push_back({nodes[a], *it});
      }
    }
    if (ring.size() < 2) continue;
    for (std::size_t i = 0; i < ring.size(); ++i) {
      const Member& from = ring[i];
      const Member& to = ring[(i + 1) % ring.size()];
      out.push_back({from.node, from.gpu, to.node, to.gpu, bytes, from.node != to.node ? rate_cap : 0.0});
    }
  }
}

// Halving-doubling (see the header): one phase per partner distance.
void add_halving_doubling(const std::vector<GroupPlacement>& groups, double s, double rate_cap,
                          std::vector<FlowPhase>& out) {
  const auto r = static_cast<std::int64_t>(groups.front().locals.size());
  const auto size = r * static_cast<std::int64_t>(groups.front().nodes.size());
  for (std::int64_t d = 1; d < size; d *= 2) {
    FlowPhase phase{2.0, 2.0, {}, false};
    for (const GroupPlacement& p : groups) {
      for (std::int64_t i = 0; i < size; ++i) {
        const std::int64_t j = i ^ d;
        const Member from{p.nodes[static_cast<std::size_t>(i / r)],
                          p.locals[static_cast<std::size_t>(i % r)]};
        const Member to{p.nodes[static_cast<std::size_t>(j / r)], p.locals[static_cast<std::size_t>(j % r)]};
        const double bytes = s / static_cast<double>(2 * d);
        phase.transfers.push_back(
            {from.node, from.gpu, to.node, to.gpu, bytes, from.node != to.node ? rate_cap : 0.0});
      }
    }
    out.push_back(std::move(phase));
  }
}

FlowPlan build_plan(const graph::CommOp& op, Algorithm algorithm, const TopologyShape& shape,
                    const PathParams& path, Protocol protocol, double fraction) {
  FlowPlan plan;
  const graph::CommGroup& g = op.group;
  if (g.size <= 1 || op.bytes <= 0.0) return plan;
  const double n = static_cast<double>(g.size);
  const std::int64_t r = placed_per_node(g, shape);
  const double rd = static_cast<double>(r);
  const double nodes = static_cast<double>(g.nodes);
  const double s = op.bytes;
  const std::int64_t c = std::max<std::int64_t>(1, g.concurrent_per_node);
  const std::vector<GroupPlacement> groups = place_groups(g, shape);
  const std::int64_t channels = std::clamp<std::int64_t>(shape.nics_per_node / c, 1, r);
  const double cap = path.per_flow_bytes_per_s;

  if (algorithm == Algorithm::nvls) {
    plan.fixed_time_s = collective_cost(op, path).time_s;
    return plan;
  }
  if (op.kind == graph::CollectiveKind::all_reduce && algorithm == Algorithm::halving_doubling) {
    add_halving_doubling(groups, s, cap, plan.phases);
    return plan;
  }
  if (op.kind == graph::CollectiveKind::all_reduce &&
      (algorithm == Algorithm::tree || algorithm == Algorithm::hierarchical) && g.nodes > 1 && r > 1) {
    plan.pipelined = true;
    const double inter_hops = algorithm == Algorithm::tree ? 2 * std::log2(nodes) : 2 * (nodes - 1);
    FlowPhase inter{2 * (nodes - 1), inter_hops, {}, true, inter_hops};
    const double node_bytes = tree_inter_bytes(algorithm, nodes, s);
    for (const GroupPlacement& p : groups) {
      for (const std::int64_t l : p.locals)
        add_rings(p.nodes, {l}, 1, node_bytes / (2 * (nodes - 1) * rd), cap / rd, inter.transfers);
    }
    plan.fill_stages = inter_hops;
    plan.fill_bytes = node_bytes / rd;
    if (path.nvls_bytes_per_s > 0.0 && protocol == Protocol::simple) {  // NVLS-tree: Simple only
      plan.fixed_time_s = 2 * (rd - 1) / rd * s / (path.nvls_bytes_per_s * fraction);
    } else {
      FlowPhase intra{2 * (rd - 1), 2 * (rd - 1), {}, true};
      for (const GroupPlacement& p : groups) {
        if (p.nodes.front() == groups.front().nodes.front()) {
          add_rings({p.nodes.front()}, p.locals, 1, s / rd, 0.0, intra.transfers);
        }
      }
      plan.phases.push_back(std::move(intra));
    }
    plan.fill_phase = static_cast<int>(plan.phases.size());
    plan.phases.push_back(std::move(inter));
    return plan;
  }
  const double chans = static_cast<double>(channels);
  switch (op.kind) {
    case graph::CollectiveKind::all_reduce:
    case graph::CollectiveKind::all_gather:
    case graph::CollectiveKind::reduce_scatter:
    case graph::CollectiveKind::broadcast:
    case graph::CollectiveKind::reduce: {
      const bool all_reduce = op.kind == graph::CollectiveKind::all_reduce;
      const bool pipeline =
          op.kind == graph::CollectiveKind::broadcast || op.kind == graph::CollectiveKind::reduce;
      const double steps = pipeline ? 1.0 : (all_reduce ? 2 * (n - 1) : n - 1);
      const double inter_steps = nodes > 1 ? (all_reduce ? 2 * (nodes - 1) : nodes - 1) : 0.0;
      FlowPhase phase{steps, pipeline ? n - 1 : steps, {}, true, inter_steps};
      const double chunk = pipeline ? s / chans : s / (n * chans);
      for (const GroupPlacement& p : groups)
        add_rings(p.nodes, p.locals, channels, chunk, cap / chans, phase.transfers);
      if (pipeline) {  // a chain of n - 1 stages fills the pipeline
        plan.pipelined = true;
        plan.fill_phase = 0;
        plan.fill_stages = n - 1;
        plan.fill_bytes = s;
      }
      plan.phases.push_back(std::move(phase));
      return plan;
    }
    case graph::CollectiveKind::all_to_all: {
      // Node-aware (CommOp::node_aware): the fraction f of what leaves a node crosses, and each GPU
      // forwards to each peer the copies every other node's same-index GPU has for that peer's experts,
      // the s / n the all-to-all would have sent it directly.
      const double f = op.node_aware.value_or(1.0);
      const double per_gpu = op.gpu_copies.value_or(1.0);  // DeepEP: each token once per destination GPU
      FlowPhase phase;
      for (const GroupPlacement& p : groups) {
        const double other_nodes = static_cast<double>(p.nodes.size()) - 1;
        const double forwarded = op.node_aware ? other_nodes * s / n : 0.0;
        for (const std::int64_t a : p.nodes) {
          for (const std::int64_t from : p.locals) {
            for (const std::int64_t to : p.locals) {
              if (from != to) phase.transfers.push_back({a, from, a, to, per_gpu * (s / n + forwarded), 0.0});
            }
            for (const std::int64_t b : p.nodes) {
              if (b != a) phase.transfers.push_back({a, from, b, from, f * rd * s / n, cap / rd});
            }
          }
        }
      }
      plan.phases.push_back(std::move(phase));
      return plan;
    }
    case graph::CollectiveKind::send_recv: {
      FlowPhase phase;
      for (const GroupPlacement& p : groups) {
        const Member from{p.nodes.front(), p.locals.front()};
        const Member to{p.nodes.back(), p.nodes.size() > 1 ? p.locals.front() : p.locals.back()};
        phase.transfers.push_back(
            {from.node, from.gpu, to.node, to.gpu, s, from.node != to.node ? cap : 0.0});
      }
      plan.phases.push_back(std::move(phase));
      return plan;
    }
  }
  return plan;
}

// The protocol's hop latency over the profile's for one phase (see the header).
double latency_scale(const FlowPhase& phase, const HopLatencies& hop, const PathParams& path) {
  double intra = 0.0;
  double inter = 0.0;
  for (const Transfer& t : phase.transfers) (t.src_node == t.dst_node ? intra : inter) += 1.0;
  const double simple = intra * path.intra_latency_s + inter * path.inter_latency_s;
  return simple > 0.0 ? (intra * hop.intra_s + inter * hop.inter_s) / simple : 1.0;
}

}  // namespace

FlowPlan plan_collective(const graph::CommOp& op, const CollectiveCost& choice, const TopologyShape& shape,
                         const PathParams& path) {
  const double fraction = choice.algorithm == Algorithm::nvls || choice.algorithm == Algorithm::direct
                              ? 1.0
                              : protocol_bandwidth_fraction(family_of(choice.algorithm), choice.protocol);
  FlowPlan plan = build_plan(op, choice.algorithm, shape, path, choice.protocol, fraction);
  plan.bandwidth_fraction = fraction;
  if (choice.algorithm != Algorithm::nvls && choice.algorithm != Algorithm::direct && !plan.phases.empty())
    plan.base_latency_s = nccl_base_latency_us(family_of(choice.algorithm), choice.protocol) * 1e-6;
  const HopLatencies hop =
      hop_latencies(path, choice.algorithm, choice.protocol, op.group.nodes == op.group.size);
  for (FlowPhase& phase : plan.phases) {
    phase.latency_scale = latency_scale(phase, hop, path);
    if (path.intra_latency_s > 0.0) phase.intra_scale = hop.intra_s / path.intra_latency_s;
    // A route between nodes also crosses the GPU's link (topology.hpp): NCCL counts one network hop.
    const double route_s = path.inter_latency_s + path.intra_latency_s;
    if (route_s > 0.0) phase.inter_scale = hop.inter_s / route_s;
  }
  const std::int64_t ports =
      std::max<std::int64_t>(1, shape.nics_per_node / std::max<std::int64_t>(1, shape.gpus_per_node));
  if (ports == 1) return plan;
  for (FlowPhase& phase : plan.phases) {
    std::vector<Transfer> spread;
    spread.reserve(phase.transfers.size());
    for (const Transfer& t : phase.transfers) {
      if (t.src_node == t.dst_node) {
        spread.push_back(t);
        continue;
      }
      for (std::int64_t port = 0; port < ports; ++port) {
        Transfer part = t;
        part.bytes = t.bytes / static_cast<double>(ports);
        part.rate_cap_bytes_per_s = t.rate_cap_bytes_per_s / static_cast<double>(ports);
        part.port = port;
        part.share = t.share / static_cast<double>(ports);
        spread.push_back(part);
      }
    }
    phase.transfers = std::move(spread);
  }
  return plan;
}

double plan_time_s(const FlowPlan& plan, const std::vector<PhaseTime>& measured) {
  DTSIM_CHECK(measured.size() == plan.phases.size(), "one measurement per phase");
  // Pipelined phases: the transfers overlap (the slowest sets the pace) while the hop latencies add up,
  // as in collective_cost.hpp's tree; otherwise the phases follow each other.
  double transfer = plan.fixed_time_s;
  double latency = 0.0;
  double fill_latency = 0.0;
  double fill_time = 0.0;
  for (std::size_t i = 0; i < plan.phases.size(); ++i) {
    const FlowPhase& phase = plan.phases[i];
    const double t = phase.steps * measured[i].transfer_s / plan.bandwidth_fraction;
    transfer = plan.pipelined ? std::max(transfer, t) : transfer + t;
    const double phase_latency =
        phase.ring ? (phase.latency_hops - phase.inter_hops) * measured[i].latency_s * phase.intra_scale +
                         phase.inter_hops * measured[i].inter_latency_s * phase.inter_scale
                   : phase.latency_hops * measured[i].latency_s * phase.latency_scale;
    latency += phase_latency;
    if (static_cast<int>(i) == plan.fill_phase) {
      fill_latency = phase_latency;
      fill_time = t;
    }
  }
  const double fill = plan.fill_phase >= 0 && plan.fill_bytes > 0.0
                          ? pipeline_fill_s(transfer, fill_latency, plan.fill_stages,
                                            kPipelineChunkBytes * fill_time / plan.fill_bytes)
                          : 0.0;
  return plan.base_latency_s + transfer + latency + fill;
}

}  // namespace dtsim::network
