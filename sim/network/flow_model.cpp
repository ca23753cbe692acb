#include "network/flow_model.hpp"

#include "network/analytic_model.hpp"
#include "network/flow_plan.hpp"
#include "network/simgrid_flows.hpp"

namespace dtsim::network {

FlowModel::FlowModel(const config::Scenario& scenario)
    : path_(path_params(scenario)), topology_(topology_shape(scenario)) {}

core::TimeNs FlowModel::duration(const graph::CommOp& op) const {
  if (op.group.size <= 1 || op.bytes <= 0.0) return 0;
  const CollectiveCost choice = collective_cost(op, path_);
  const graph::CommGroup& g = op.group;
  const Key key{static_cast<int>(op.kind),
                static_cast<int>(choice.algorithm) * 3 + static_cast<int>(choice.protocol),
                op.bytes,
                g.size,
                g.nodes,
                g.concurrent_per_node,
                g.nodes > 1 ? g.node_stride : 1};
  const std::lock_guard<std::mutex> lock(mutex_);
  if (const auto it = cache_.find(key); it != cache_.end()) return it->second;
  const FlowPlan plan = plan_collective(op, choice, topology_.shape(), path_);
  const core::TimeNs t = core::seconds_to_ns(plan_time_s(plan, simulate_phases(topology_, plan.phases)));
  ++simulations_;
  cache_.emplace(key, t);
  return t;
}

std::int64_t FlowModel::simulations() const {
  const std::lock_guard<std::mutex> lock(mutex_);
  return simulations_;
}

}  // namespace dtsim::network
