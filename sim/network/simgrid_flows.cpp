#include "network/simgrid_flows.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <xbt/log.h>
#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <map>
#include <simgrid/s4u.hpp>
#include <string>
#include <tuple>
#include <utility>

#include "core/errors.hpp"

namespace dtsim::network {

namespace {

namespace sg4 = simgrid::s4u;

// Inside the child: the whole SimGrid run.
std::vector<PhaseTime> run_simgrid(const Topology& topology, const std::vector<FlowPhase>& phases) {
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
  // through different ports.
  using Endpoint = std::tuple<std::int64_t, std::int64_t, std::int64_t>;
  std::map<Endpoint, sg4::Host*> hosts;
  std::map<std::size_t, sg4::Link*> links;
  const auto host = [&](const Endpoint& e) {
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
    if (fresh) {
      const TopologyLink& l = topology.link(id);
      it->second = zone->create_link("link-" + std::to_string(id), l.bytes_per_s)->seal();
    }
    return it->second;
  };
  const auto endpoints = [](const Transfer& t) {
    return std::pair{Endpoint{t.src_node, t.src_gpu, t.port}, Endpoint{t.dst_node, t.dst_gpu, t.port}};
  };
  // Route latency per host pair, added to the step outside SimGrid (see the header). A fabric's
  // per-flow cap is a link of that bandwidth of the pair's own.
  std::map<std::pair<Endpoint, Endpoint>, double> latency;
  std::vector<double> phase_latency;
  for (const FlowPhase& phase : phases) {
    double slowest = 0.0;
    double sum = 0.0;
    for (const Transfer& t : phase.transfers) {
      const auto [a, b] = endpoints(t);
      auto [it, fresh] = latency.try_emplace({a, b}, 0.0);
      if (fresh) {
        std::vector<sg4::LinkInRoute> route;
        for (const std::size_t id : topology.route(t.src_node, t.src_gpu, t.dst_node, t.dst_gpu, t.port)) {
          route.emplace_back(link(id));
          it->second += topology.link(id).latency_s;
        }
        if (t.rate_cap_bytes_per_s > 0.0) {
          route.emplace_back(
              zone->create_link("cap-" + std::to_string(latency.size()), t.rate_cap_bytes_per_s)->seal());
        }
        zone->add_route(host(a)->get_netpoint(), host(b)->get_netpoint(), nullptr, nullptr, route, false);
      }
      slowest = std::max(slowest, it->second);
      sum += it->second;
    }
    const double mean = phase.transfers.empty() ? 0.0 : sum / static_cast<double>(phase.transfers.size());
    phase_latency.push_back(phase.ring ? mean : slowest);
  }
  zone->seal();

  std::vector<PhaseTime> steps;
  if (hosts.empty()) return std::vector<PhaseTime>(phases.size());
  sg4::Actor::create("driver", hosts.begin()->second, [&]() {
    for (const FlowPhase& phase : phases) {
      const double start = sg4::Engine::get_clock();
      std::vector<sg4::CommPtr> comms;
      comms.reserve(phase.transfers.size());
      for (const Transfer& t : phase.transfers) {
        const auto [a, b] = endpoints(t);
        comms.push_back(
            sg4::Comm::sendto_async(hosts.at(a), hosts.at(b), static_cast<std::uint64_t>(t.bytes + 0.5)));
      }
      sg4::Comm::wait_all(comms);
      steps.push_back({sg4::Engine::get_clock() - start, phase_latency[steps.size()]});
    }
  });
  engine.run();
  return steps;
}

bool write_all(int fd, const void* data, std::size_t size) {
  const auto* p = static_cast<const char*>(data);
  while (size > 0) {
    const ssize_t w = ::write(fd, p, size);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    size -= static_cast<std::size_t>(w);
  }
  return true;
}

bool read_all(int fd, void* data, std::size_t size) {
  auto* p = static_cast<char*>(data);
  while (size > 0) {
    const ssize_t r = ::read(fd, p, size);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    size -= static_cast<std::size_t>(r);
  }
  return true;
}

}  // namespace

std::vector<PhaseTime> simulate_phases(const Topology& topology, const std::vector<FlowPhase>& phases) {
  if (phases.empty()) return {};
  int fds[2];
  if (::pipe(fds) != 0) throw core::InternalError("flow model: pipe() failed");
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw core::InternalError("flow model: fork() failed");
  }
  if (pid == 0) {
    ::close(fds[0]);
    int status = 1;
    try {
      const std::vector<PhaseTime> steps = run_simgrid(topology, phases);
      const std::size_t count = steps.size();
      if (write_all(fds[1], &count, sizeof count) &&
          write_all(fds[1], steps.data(), count * sizeof(PhaseTime))) {
        status = 0;
      }
    } catch (...) {
      status = 1;
    }
    ::_exit(status);
  }
  ::close(fds[1]);
  std::size_t count = 0;
  std::vector<PhaseTime> steps;
  bool ok = read_all(fds[0], &count, sizeof count) && count == phases.size();
  if (ok) {
    steps.resize(count);
    ok = read_all(fds[0], steps.data(), count * sizeof(PhaseTime));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!ok || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    throw core::InternalError("flow model: the SimGrid run failed");
  }
  return steps;
}

}  // namespace dtsim::network
