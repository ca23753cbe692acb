// The `flow` network model: each collective's transfers (flow_plan.hpp), with those of every other
// group of its kind, run on SimGrid's flow-level model over the topology graph (simgrid_flows.hpp) for
// max-min bandwidth sharing and contention between concurrent collectives. The algorithm is NCCL's
// choice as the analytic model makes it (collective_cost.hpp). Durations go to a FlowCache
// (flow_cache.hpp) under the network's identity and the collective (kind, algorithm, protocol, bytes,
// group layout): the model's own, or one shared with other models (a search's plans, a sweep's points),
// so that each distinct collective on one network is simulated once.
//
// Size limit: SimGrid's routing over the topology grows with the square of the GPUs a collective's
// groups span, which for any collective that leaves a node is every GPU of the cluster. Measured on
// the 2-core development machine (data-parallel GPT 1.3B on DGX A100 nodes, 2:1 fat-tree, one
// iteration, `dtsim run`): 1,024 GPUs 0.5 s and 39 MB, 2,048 GPUs 1.4 s and 109 MB, 4,096 GPUs 3.4 s
// and 395 MB, 8,192 GPUs 25 s and 1.5 GB, 16,384 GPUs 132 s and 5.8 GB (about 22 bytes x GPUs^2).
// A cluster of more than kMaxFlowGpus GPUs (the largest shipped flow use, Llama 3 405B on 16,384
// H100) would take 23 GB and about 9 minutes or more: the model refuses it when it is made, with
// core::InfeasibleError (results::evaluate() turns it into an infeasible result with the reason;
// `dtsim nccl-tests` exits 3 with it). The analytic level has no such limit.
#pragma once

#include <cstdint>
#include <memory>

#include "network/collective_cost.hpp"
#include "network/flow_cache.hpp"
#include "network/network_model.hpp"
#include "network/topology.hpp"

namespace dtsim::network {

inline constexpr std::int64_t kMaxFlowGpus = 16'384;

class FlowModel final : public NetworkModel {
 public:
  // `shared`: a cache other models use too (not owned; it must outlive the model); null: a cache of
  // this model's own. Throws core::InfeasibleError for a cluster of more than kMaxFlowGpus GPUs.
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
