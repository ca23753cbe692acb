#include "network/simgrid_flows.hpp"

#include "core/errors.hpp"
#include "network/flow_helper.hpp"
#include "network/flow_job.hpp"

namespace dtsim::network {

std::vector<PhaseTime> simulate_phases(const Topology& topology, const std::vector<FlowPhase>& phases,
                                       double nic_speed) {
  if (phases.empty()) return {};
  const FlowJob job = make_flow_job(topology, phases, nic_speed);
  if (job.routes.empty()) return std::vector<PhaseTime>(phases.size());  // nothing moves
  const std::vector<double> transfer_s = decode_phase_times(call_flow_helper(encode_flow_job(job)));
  if (transfer_s.size() != phases.size()) {
    throw core::InternalError("flow model: the SimGrid helper answered for another number of phases");
  }
  std::vector<PhaseTime> steps;
  steps.reserve(phases.size());
  for (std::size_t i = 0; i < phases.size(); ++i) steps.push_back({transfer_s[i], job.phase_latency_s[i], job.phase_inter_latency_s[i]});
  return steps;
}

}  // namespace dtsim::network
