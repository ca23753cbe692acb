#include "results/reroute_pace.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "results/evaluate.hpp"
#include "results/result.hpp"

namespace dtsim::results {

std::optional<std::string> reroute_refusal(const config::Scenario& s) {
  const auto& par = s.parallelism;
  if (s.layer_model || s.dlrm) return "re-routing applies to transformer and MLP models";
  if (par.data < 2) return "re-routing needs data-parallel replicas to take a failed node's work: data is 1";
  if (par.zero_stage > 0 || par.distributed_optimizer) {
    return fmt::format(
        "re-routing continues from the replicas' own state, which {} shards over the data-parallel ranks (a "
        "failed node's share is lost): use \"recovery\": \"elastic\" or \"restart\", or ZeRO stage 0",
        par.zero_stage > 0 ? fmt::format("ZeRO stage {}", par.zero_stage)
                           : std::string("the distributed optimizer"));
  }
  if (par.virtual_stages > 1) {
    return fmt::format("re-routing plans one model chunk per stage; this plan runs {} virtual stages",
                       par.virtual_stages);
  }
  if (par.expert > 1 || s.model.moe) {
    return std::string(
        "re-routing moves a micro-batch between data-parallel replicas, which a mixture of experts' token "
        "exchanges join: not modelled");
  }
  return std::nullopt;
}

std::vector<std::int64_t> spread_down_nodes(std::int64_t nodes, std::int64_t down) {
  std::vector<std::int64_t> out;
  for (std::int64_t i = 0; i < std::min(down, nodes); ++i) out.push_back(i * nodes / down);
  return out;
}

double ReroutePaces::operator()(std::int64_t down) {
  if (const auto it = paces_.find(down); it != paces_.end()) return it->second;
  config::Scenario s = fault_free_.scenario;
  s.failures.reset();
  s.simulation.ranks = config::RankMode::all;
  EvaluateOptions options;
  options.down_nodes = spread_down_nodes(s.cluster.nodes, down);
  const Result rerouted = evaluate(s, options);
  const double pace = rerouted.status == Status::ok && rerouted.iteration_time_s > 0.0
                          ? std::min(1.0, fault_free_.iteration_time_s / rerouted.iteration_time_s)
                          : 0.0;
  paces_.emplace(down, pace);
  return pace;
}

}  // namespace dtsim::results
