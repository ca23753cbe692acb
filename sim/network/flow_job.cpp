#include "network/flow_job.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <type_traits>
#include <utility>

#include "core/errors.hpp"

namespace dtsim::network {

namespace {

constexpr std::uint64_t kJobMagic = 0x31424f4a574f4c46ULL;    // "FLOWJOB1"
constexpr std::uint64_t kTimesMagic = 0x31454d4954574f4cULL;  // "LOWTIME1"

class Writer {
 public:
  template <typename T>
  void put(T value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const char*>(&value);
    bytes_.append(p, sizeof value);
  }
  std::string take() { return std::move(bytes_); }

 private:
  std::string bytes_;
};

class Reader {
 public:
  explicit Reader(const std::string& bytes) : bytes_(bytes) {}
  template <typename T>
  T get() {
    static_assert(std::is_trivially_copyable_v<T>);
    if (bytes_.size() - at_ < sizeof(T)) throw core::InternalError("flow model: truncated message");
    T value;
    std::memcpy(&value, bytes_.data() + at_, sizeof value);
    at_ += sizeof value;
    return value;
  }
  // A count of items of at least `item_bytes` each that the rest of the message can hold.
  std::size_t count(std::size_t item_bytes) {
    const auto n = get<std::uint64_t>();
    if (n > (bytes_.size() - at_) / item_bytes) throw core::InternalError("flow model: malformed message");
    return static_cast<std::size_t>(n);
  }
  void finish() const {
    if (at_ != bytes_.size()) throw core::InternalError("flow model: trailing bytes in a message");
  }

 private:
  const std::string& bytes_;
  std::size_t at_ = 0;
};

void put_endpoint(Writer& w, const FlowEndpoint& e) {
  w.put(std::get<0>(e));
  w.put(std::get<1>(e));
  w.put(std::get<2>(e));
}

FlowEndpoint get_endpoint(Reader& r) {
  const auto node = r.get<std::int64_t>();
  const auto gpu = r.get<std::int64_t>();
  const auto port = r.get<std::int64_t>();
  return {node, gpu, port};
}

}  // namespace

FlowJob make_flow_job(const Topology& topology, const std::vector<FlowPhase>& phases, double nic_speed) {
  FlowJob job;
  std::map<std::pair<FlowEndpoint, FlowEndpoint>, std::size_t> route_of;  // host pair -> route index
  std::vector<double> route_latency;
  std::vector<bool> link_listed(topology.link_count(), false);
  for (const FlowPhase& phase : phases) {
    double slowest = 0.0;
    double sum[2] = {0.0, 0.0};    // route latencies, inside a node and between nodes
    double count[2] = {0.0, 0.0};  // transfers, each spread one counted once
    std::vector<FlowTransfer>& transfers = job.phases.emplace_back();
    for (const Transfer& t : phase.transfers) {
      const FlowEndpoint a{t.src_node, t.src_gpu, t.port};
      const FlowEndpoint b{t.dst_node, t.dst_gpu, t.port};
      auto [it, fresh] = route_of.try_emplace({a, b}, job.routes.size());
      if (fresh) {
        FlowRoute route{.src = a, .dst = b, .links = {}, .rate_cap_bytes_per_s = t.rate_cap_bytes_per_s};
        double latency = 0.0;
        for (const std::size_t id : topology.route(t.src_node, t.src_gpu, t.dst_node, t.dst_gpu, t.port)) {
          route.links.push_back(id);
          latency += topology.link(id).latency_s;
          if (!link_listed[id]) {
            link_listed[id] = true;
            const TopologyLink& link = topology.link(id);
            job.links.push_back({id, link.bytes_per_s * (link.role == LinkRole::nic ? nic_speed : 1.0)});
          }
        }
        job.routes.push_back(std::move(route));
        route_latency.push_back(latency);
      }
      slowest = std::max(slowest, route_latency[it->second]);
      const int between = t.src_node != t.dst_node ? 1 : 0;
      sum[between] += t.share * route_latency[it->second];
      count[between] += t.share;
      transfers.push_back({it->second, t.bytes});
    }
    const auto mean = [&](int k) { return count[k] > 0.0 ? sum[k] / count[k] : 0.0; };
    job.phase_latency_s.push_back(phase.ring ? mean(0) : slowest);
    job.phase_inter_latency_s.push_back(phase.ring ? mean(1) : 0.0);
  }
  return job;
}

std::string encode_flow_job(const FlowJob& job) {
  Writer w;
  w.put(kJobMagic);
  w.put(static_cast<std::uint64_t>(job.links.size()));
  for (const FlowLink& l : job.links) {
    w.put(static_cast<std::uint64_t>(l.id));
    w.put(l.bytes_per_s);
  }
  w.put(static_cast<std::uint64_t>(job.routes.size()));
  for (const FlowRoute& r : job.routes) {
    put_endpoint(w, r.src);
    put_endpoint(w, r.dst);
    w.put(r.rate_cap_bytes_per_s);
    w.put(static_cast<std::uint64_t>(r.links.size()));
    for (const std::size_t id : r.links) w.put(static_cast<std::uint64_t>(id));
  }
  w.put(static_cast<std::uint64_t>(job.phases.size()));
  for (const std::vector<FlowTransfer>& phase : job.phases) {
    w.put(static_cast<std::uint64_t>(phase.size()));
    for (const FlowTransfer& t : phase) {
      w.put(static_cast<std::uint64_t>(t.route));
      w.put(t.bytes);
    }
  }
  return w.take();
}

FlowJob decode_flow_job(const std::string& bytes) {
  Reader r(bytes);
  if (r.get<std::uint64_t>() != kJobMagic) throw core::InternalError("flow model: not a flow job");
  FlowJob job;
  job.links.resize(r.count(16));
  for (FlowLink& l : job.links) {
    l.id = static_cast<std::size_t>(r.get<std::uint64_t>());
    l.bytes_per_s = r.get<double>();
  }
  job.routes.resize(r.count(64));
  for (FlowRoute& route : job.routes) {
    route.src = get_endpoint(r);
    route.dst = get_endpoint(r);
    route.rate_cap_bytes_per_s = r.get<double>();
    route.links.resize(r.count(8));
    for (std::size_t& id : route.links) id = static_cast<std::size_t>(r.get<std::uint64_t>());
  }
  job.phases.resize(r.count(8));
  for (std::vector<FlowTransfer>& phase : job.phases) {
    phase.resize(r.count(16));
    for (FlowTransfer& t : phase) {
      t.route = static_cast<std::size_t>(r.get<std::uint64_t>());
      t.bytes = r.get<double>();
      if (t.route >= job.routes.size()) throw core::InternalError("flow model: a transfer has no route");
    }
  }
  r.finish();
  return job;
}

std::string encode_phase_times(const std::vector<double>& transfer_s) {
  Writer w;
  w.put(kTimesMagic);
  w.put(static_cast<std::uint64_t>(transfer_s.size()));
  for (const double t : transfer_s) w.put(t);
  return w.take();
}

std::vector<double> decode_phase_times(const std::string& bytes) {
  Reader r(bytes);
  if (r.get<std::uint64_t>() != kTimesMagic) throw core::InternalError("flow model: not phase times");
  std::vector<double> times(r.count(8));
  for (double& t : times) t = r.get<double>();
  r.finish();
  return times;
}

}  // namespace dtsim::network
