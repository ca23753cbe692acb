// The `flow` network model: each collective's transfers (flow_plan.hpp), with those of every other
// group of its kind, run on SimGrid's flow-level model over the topology graph (simgrid_flows.hpp) for
// max-min bandwidth sharing and contention between concurrent collectives. The algorithm is NCCL's
// choice as the analytic model makes it (collective_cost.hpp). Durations go to a FlowCache
// (flow_cache.hpp) under the network's identity and the collective (kind, algorithm, protocol, bytes,
// group layout): the model's own, or one shared with other models (a search's plans, a sweep's points),
// so that each distinct collective on one network is simulated once.
#pragma once

#include <cstdint>
#include <memory>

#include "network/collective_cost.hpp"
#include "network/flow_cache.hpp"
#include "network/network_model.hpp"
#include "network/topology.hpp"

namespace dtsim::network {

class FlowModel final : public NetworkModel {
 public:
  // `shared`: a cache other models use too (not owned; it must outlive the model); null: a cache of
  // this model's own.
  explicit FlowModel(const config::Scenario& scenario, FlowCache* shared = nullptr);
  core::TimeNs duration(const graph::CommOp& op) const override;
  const char* name() const override { return "flow"; }

  // Collectives simulated so far through this model's cache (by any model sharing it).
  std::int64_t simulations() const { return cache_->simulations(); }
  const Topology& topology() const { return topology_; }

 private:
  PathParams path_;
  Topology topology_;
  std::unique_ptr<FlowCache> own_cache_;
  FlowCache* cache_;
  std::int64_t network_;  // this network's number in the cache, the first part of every key
};

}  // namespace dtsim::network
