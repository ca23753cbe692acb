// The `analytic` network model: alpha-beta ring costs (collective_cost.hpp) with the bottlenecks of
// the cluster: the node's intra-node link (bandwidth x achievable efficiency), its NICs (line rate x
// count x the fabric's achievable efficiency, divided by the oversubscription of the switch tiers the
// group crosses: collective_cost.hpp), per-step latencies of both, and the fabric's per-flow cap (kernel
// TCP).
#pragma once

#include "network/collective_cost.hpp"
#include "network/network_model.hpp"

namespace dtsim::network {

PathParams path_params(const config::Scenario& scenario);

class AnalyticModel final : public NetworkModel {
 public:
  explicit AnalyticModel(const config::Scenario& scenario) : path_(path_params(scenario)) {}
  core::TimeNs duration(const graph::CommOp& op) const override {
    return core::seconds_to_ns(collective_time_s(op, path_));
  }
  const char* name() const override { return "analytic"; }
  const PathParams& path() const { return path_; }

 private:
  PathParams path_;
};

}  // namespace dtsim::network
