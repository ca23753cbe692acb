// Runs flow phases (flow_plan.hpp) on SimGrid's flow-level network model (S4U): max-min fair sharing
// of every link of the topology among the transfers that cross it (SimGrid's CM02 model, no TCP
// window or latency/bandwidth correction factors: the profiles' achievable bandwidths already hold
// them). Links carry no latency inside SimGrid: its CM02 model would then share bandwidth in inverse
// proportion to each flow's route latency (TCP's RTT unfairness), which RDMA fabrics and NVLink do not
// show; a phase's step is the max-min transfer time plus the largest route latency (sum of its
// links' latencies) among its transfers. The platform is built from the topology: one host per GPU
// that sends or receives, one SimGrid link per directed topology link, the topology's routes.
//
// SimGrid's engine is one per process and cannot be restarted, so every call resolves the routes here
// (flow_job.hpp) and runs SimGrid in a freshly started helper process (flow_helper.hpp) that sends
// the transfer times back and exits; the caller's process never holds SimGrid state. Safe to call
// from several threads at once.
#pragma once

#include <vector>

#include "network/flow_plan.hpp"
#include "network/topology.hpp"

namespace dtsim::network {

// `nic_speed`: the NIC cables' speed factor (make_flow_job).
std::vector<PhaseTime> simulate_phases(const Topology& topology, const std::vector<FlowPhase>& phases,
                                       double nic_speed = 1.0);

}  // namespace dtsim::network
