// The `flow` network model: each collective's transfers (flow_plan.hpp), with those of every other
// group of its kind, run on SimGrid's flow-level model over the topology graph (simgrid_flows.hpp) for
// max-min bandwidth sharing and contention between concurrent collectives. The algorithm is NCCL's
// choice as the analytic model makes it (collective_cost.hpp). Durations are cached by (collective,
// algorithm, bytes, group layout); the topology is fixed per model, so each distinct collective is
// simulated once per model.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <tuple>

#include "network/collective_cost.hpp"
#include "network/network_model.hpp"
#include "network/topology.hpp"

namespace dtsim::network {

class FlowModel final : public NetworkModel {
 public:
  explicit FlowModel(const config::Scenario& scenario);
  core::TimeNs duration(const graph::CommOp& op) const override;
  const char* name() const override { return "flow"; }

  // Collectives simulated so far (cache misses).
  std::int64_t simulations() const;
  const Topology& topology() const { return topology_; }

 private:
  using Key = std::tuple<int, int, double, std::int64_t, std::int64_t, std::int64_t, std::int64_t>;

  PathParams path_;
  Topology topology_;
  mutable std::mutex mutex_;
  mutable std::map<Key, core::TimeNs> cache_;
  mutable std::int64_t simulations_ = 0;
};

}  // namespace dtsim::network
