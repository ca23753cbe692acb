// A SimGrid flow run as plain data (simgrid_flows.hpp): everything the helper process needs to build
// the platform and replay the phases, with the topology already resolved into routes, so that the
// helper needs no Topology; and the byte encoding of the job and of its answer, passed between the
// two processes of the same dtsim build (native byte order, no versioning beyond a magic number).
//
// make_flow_job() walks the phases' transfers in order; each host pair (node, GPU, port) at both ends
// gets one route when first seen, with the route's link ids in order, the per-flow cap of that first
// transfer (0: none) and the sum of its links' latencies. The helper creates SimGrid's hosts, links and
// routes in exactly that order (routes in `routes` order, links at their first use), so that the
// platform, and the numbers, are those of building it while walking the transfers.
// phase_latency_s: per phase, the largest route latency among its transfers, or for a ring phase the
// mean over its transfers inside a node, and phase_inter_latency_s the mean over those between nodes
// (a transfer spread over several NICs counts once); added to the SimGrid transfer time outside
// SimGrid (simgrid_flows.hpp says why).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "network/flow_plan.hpp"
#include "network/topology.hpp"

namespace dtsim::network {

using FlowEndpoint = std::tuple<std::int64_t, std::int64_t, std::int64_t>;  // node, GPU, port

struct FlowLink {
  std::size_t id = 0;  // topology link id (names the SimGrid link)
  double bytes_per_s = 0.0;
};

struct FlowRoute {
  FlowEndpoint src;
  FlowEndpoint dst;
  std::vector<std::size_t> links;  // topology link ids, source to destination
  double rate_cap_bytes_per_s = 0.0;
};

struct FlowTransfer {
  std::size_t route = 0;  // index into FlowJob::routes
  double bytes = 0.0;
};

struct FlowJob {
  std::vector<FlowLink> links;                    // every link some route uses, by first use
  std::vector<FlowRoute> routes;                  // one per host pair, by first use
  std::vector<std::vector<FlowTransfer>> phases;  // the transfers of each phase, which run at once
  std::vector<double> phase_latency_s;            // kept by the caller; not encoded
  std::vector<double> phase_inter_latency_s;      // likewise
};

// `nic_speed`: a collective's group's slowest NIC factor (graph::CommGroup::nic_speed,
// cluster.speed_factors), at which every NIC cable (LinkRole::nic) runs, as if every group of its kind were
// as slow as it: the analytic model costs the group at its slowest NIC too (collective_cost.hpp). The flow
// level refuses NVLink and uplink factors (config/speed_factors.hpp says why).
FlowJob make_flow_job(const Topology& topology, const std::vector<FlowPhase>& phases, double nic_speed = 1.0);

// The job without phase_latency_s, and back; decode_flow_job() throws InternalError on bytes that are
// not an encoded job.
std::string encode_flow_job(const FlowJob& job);
FlowJob decode_flow_job(const std::string& bytes);

// The helper's answer: SimGrid's transfer time of each phase, seconds.
std::string encode_phase_times(const std::vector<double>& transfer_s);
std::vector<double> decode_phase_times(const std::string& bytes);

}  // namespace dtsim::network
