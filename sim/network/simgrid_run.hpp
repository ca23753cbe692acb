// The SimGrid part of the flow model (simgrid_flows.hpp), run only inside the helper process: builds
// the platform of a FlowJob and replays its phases one after another on SimGrid's flow-level model
// (S4U, CM02 max-min sharing without TCP factors; links carry no latency, see simgrid_flows.hpp).
// Returns each phase's transfer time in seconds. SimGrid's engine is one per process and cannot be
// restarted: call this at most once in a process.
#pragma once

#include <vector>

#include "network/flow_job.hpp"

namespace dtsim::network {

std::vector<double> run_flow_job(const FlowJob& job);

}  // namespace dtsim::network
