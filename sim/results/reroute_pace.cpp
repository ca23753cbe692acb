#include "results/reroute_pace.hpp"

#include <algorithm>
#include <functional>

#include <fmt/format.h>

#include "results/evaluate.hpp"
#include "results/goodput.hpp"
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
  if (s.gpu_count() > kMaxReroutedGpus) {
    return fmt::format("re-routing is simulated rank by rank, for at most {} GPUs; this plan has {}",
                       kMaxReroutedGpus, s.gpu_count());
  }
  return std::nullopt;
}

ReroutePaces::ReroutePaces(const Result& fault_free)
    : fault_free_(fault_free),
      stages_(fault_free.scenario.parallelism.pipeline),
      node_replicas_(node_replicas(fault_free.scenario, true)),
      data_(fault_free.scenario.parallelism.data) {}

double ReroutePaces::operator()(const std::vector<std::int64_t>& down_nodes) {
  // The case: the down replicas per stage, most first.
  std::vector<std::int32_t> down;
  for (const std::int64_t n : down_nodes) {
    for (const std::int32_t r : node_replicas_[static_cast<std::size_t>(n)]) {
      if (std::find(down.begin(), down.end(), r) == down.end()) down.push_back(r);
    }
  }
  std::vector<std::int64_t> by_stage(static_cast<std::size_t>(stages_), 0);
  for (const std::int32_t r : down) ++by_stage[static_cast<std::size_t>(r % stages_)];
  std::sort(by_stage.begin(), by_stage.end(), std::greater<>());
  while (!by_stage.empty() && by_stage.back() == 0) by_stage.pop_back();
  const auto key = std::pair{static_cast<std::int64_t>(down.size()), by_stage};
  if (const auto it = paces_.find(key); it != paces_.end()) return it->second;

  // Its canonical layout (reroute_pace.hpp).
  EvaluateOptions options;
  std::int64_t next = 0;
  for (std::size_t stage = 0; stage < by_stage.size(); ++stage) {
    for (std::int64_t k = 0; k < by_stage[stage]; ++k, ++next)
      options.down_replicas.push_back({next % data_, static_cast<std::int64_t>(stage)});
  }
  config::Scenario s = fault_free_.scenario;
  s.failures.reset();
  s.simulation.ranks = config::RankMode::all;
  const Result rerouted = evaluate(s, options);
  double pace = 0.0;
  if (rerouted.status == Status::ok && rerouted.iteration_time_s > 0.0) {
    pace = std::min(1.0, fault_free_.iteration_time_s / rerouted.iteration_time_s);
  } else if (reason_.empty()) {
    reason_ = fmt::format("the re-routed iteration with {} stage replica{} down does not run: {}",
                          down.size(), down.size() == 1 ? "" : "s", rerouted.reason);
  }
  paces_.emplace(key, pace);
  return pace;
}

std::vector<models::ReroutedCase> ReroutePaces::cases() const {
  std::vector<models::ReroutedCase> out;
  for (const auto& [key, pace] : paces_) out.push_back({key.second, pace});
  return out;
}

}  // namespace dtsim::results
