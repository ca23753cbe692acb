#include "network/simgrid_run.hpp"

#include <xbt/log.h>

#include <cstdint>
#include <map>
#include <simgrid/s4u.hpp>
#include <string>

namespace dtsim::network {

namespace sg4 = simgrid::s4u;

std::vector<double> run_flow_job(const FlowJob& job) {
  if (job.routes.empty()) return std::vector<double>(job.phases.size(), 0.0);
  xbt_log_control_set("root.thresh:critical");
  int argc = 1;
  char name[] = "dtsim-flow";
  char* argv[] = {name, nullptr};
  sg4::Engine engine(&argc, argv);
  sg4::Engine::set_config("network/model:CM02");
  sg4::Engine::set_config("network/TCP-gamma:0");
  sg4::Engine::set_config("network/crosstraffic:0");
  sg4::NetZone* zone = sg4::create_full_zone("cluster");

  // A host per (node, GPU, port): SimGrid keeps one route per host pair, and a GPU reaches its NICs
  // through different ports. Hosts, links and routes are created in the job's order (flow_job.hpp).
  std::map<std::size_t, double> bandwidth;
  for (const FlowLink& l : job.links) bandwidth.emplace(l.id, l.bytes_per_s);
  std::map<FlowEndpoint, sg4::Host*> hosts;
  std::map<std::size_t, sg4::Link*> links;
  const auto host = [&](const FlowEndpoint& e) {
    auto [it, fresh] = hosts.try_emplace(e, nullptr);
    if (fresh) {
      const auto& [node, gpu, port] = e;
      it->second =
          zone->create_host(
                  "gpu-" + std::to_string(node) + "-" + std::to_string(gpu) + "-" + std::to_string(port), 1e9)
              ->seal();
    }
    return it->second;
  };
  const auto link = [&](std::size_t id) {
    auto [it, fresh] = links.try_emplace(id, nullptr);
    if (fresh) it->second = zone->create_link("link-" + std::to_string(id), bandwidth.at(id))->seal();
    return it->second;
  };
  // A fabric's per-flow cap is a link of that bandwidth of the pair's own.
  for (std::size_t r = 0; r < job.routes.size(); ++r) {
    const FlowRoute& route_of_pair = job.routes[r];
    std::vector<sg4::LinkInRoute> route;
    for (const std::size_t id : route_of_pair.links) route.emplace_back(link(id));
    if (route_of_pair.rate_cap_bytes_per_s > 0.0) {
      route.emplace_back(
          zone->create_link("cap-" + std::to_string(r + 1), route_of_pair.rate_cap_bytes_per_s)->seal());
    }
    const FlowEndpoint& a = route_of_pair.src;
    const FlowEndpoint& b = route_of_pair.dst;
    zone->add_route(host(a)->get_netpoint(), host(b)->get_netpoint(), nullptr, nullptr, route, false);
  }
  zone->seal();

  std::vector<double> steps;
  sg4::Actor::create("driver", hosts.begin()->second, [&]() {
    for (const std::vector<FlowTransfer>& phase : job.phases) {
      const double start = sg4::Engine::get_clock();
      std::vector<sg4::CommPtr> comms;
      comms.reserve(phase.size());
      for (const FlowTransfer& t : phase) {
        const FlowRoute& r = job.routes[t.route];
        comms.push_back(sg4::Comm::sendto_async(hosts.at(r.src), hosts.at(r.dst),
                                                static_cast<std::uint64_t>(t.bytes + 0.5)));
      }
      sg4::Comm::wait_all(comms);
      steps.push_back(sg4::Engine::get_clock() - start);
    }
  });
  engine.run();
  return steps;
}

}  // namespace dtsim::network
