#include "network/flow_model.hpp"

#include <fmt/format.h>

#include "core/errors.hpp"
#include "network/analytic_model.hpp"
#include "network/flow_plan.hpp"
#include "network/simgrid_flows.hpp"

namespace dtsim::network {

namespace {

int optional_enum(const auto& value) { return value ? static_cast<int>(*value) : -1; }

// Everything the flow times of a network depend on, printed exactly ({} is the shortest text that reads
// back to the same double). A field added to TopologyShape or PathParams must be added here: the size
// checks below fail until they are updated with it.
std::string network_identity(const TopologyShape& t, const PathParams& p) {
  return fmt::format(
      "topology {} {} {} {} {} {} {} {} {} {} {} {}; path {} {} {} {} {} {} {} {} {} {} {} {} {} {}",
      static_cast<int>(t.kind), t.nodes, t.gpus_per_node, t.nics_per_node, t.nodes_per_leaf, t.leaves_per_pod,
      t.intra_bytes_per_s, t.intra_latency_s, t.nic_bytes_per_s, t.nic_latency_s, t.leaf_oversubscription,
      t.core_oversubscription, p.intra_bytes_per_s, p.intra_latency_s, p.nvls_bytes_per_s,
      p.node_inter_bytes_per_s, p.inter_latency_s, p.per_flow_bytes_per_s, optional_enum(p.forced_all_reduce),
      optional_enum(p.forced_protocol), static_cast<int>(p.intra_hop), p.ll128, p.nodes_per_leaf,
      p.nodes_per_pod, p.leaf_oversubscription, p.core_oversubscription);
}

// The layouts network_identity() prints in full (x86-64): a new field changes the size and stops the build
// here until it is printed above too.
static_assert(sizeof(TopologyShape) == 96, "TopologyShape changed: add the new field to network_identity()");
static_assert(sizeof(PathParams) == 104, "PathParams changed: add the new field to network_identity()");

// `scenario`, once its cluster is known to be within the flow level's size limit (the header).
const config::Scenario& within_flow_limit(const config::Scenario& scenario) {
  const std::int64_t gpus = scenario.gpu_count();
  if (gpus > kMaxFlowGpus) {
    throw core::InfeasibleError(fmt::format(
        "too large to simulate on the flow level: {} GPUs ({} nodes x {} GPUs), over dtsim's limit of {} "
        "(SimGrid's routing grows with the square of the GPUs: 5.8 GB and over 2 minutes at the limit); "
        "use \"network\": \"analytic\"",
        gpus, scenario.cluster.nodes, scenario.node.gpus_per_node, kMaxFlowGpus));
  }
  return scenario;
}

}  // namespace

FlowModel::FlowModel(const config::Scenario& scenario, FlowCache* shared)
    : path_(path_params(within_flow_limit(scenario))),
      topology_(topology_shape(scenario)),
      own_cache_(shared != nullptr ? nullptr : std::make_unique<FlowCache>()),
      cache_(shared != nullptr ? shared : own_cache_.get()),
      network_(cache_->network(network_identity(topology_.shape(), path_))) {}

core::TimeNs FlowModel::duration(const graph::CommOp& op) const {
  if (op.group.size <= 1 || op.bytes <= 0.0) return 0;
  const CollectiveCost choice = collective_cost(op, path_);
  const graph::CommGroup& g = op.group;
  const FlowCache::Key key{
      network_,
      {static_cast<int>(op.kind), static_cast<int>(choice.algorithm) * 3 + static_cast<int>(choice.protocol),
       op.bytes, g.size, g.nodes, g.concurrent_per_node, g.nodes > 1 ? g.node_stride : 1, g.ranks_per_node(),
       op.node_aware.value_or(-1.0), op.gpu_copies.value_or(-1.0), g.nic_speed}};
  return cache_->get(key, [&] {
    const FlowPlan plan = plan_collective(op, choice, topology_.shape(), path_);
    return core::seconds_to_ns(plan_time_s(plan, simulate_phases(topology_, plan.phases, g.nic_speed)));
  });
}

}  // namespace dtsim::network
