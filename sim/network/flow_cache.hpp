// Durations of collectives simulated on the flow level, kept for every evaluation that shares the cache:
// one evaluation's repeated collectives, and the plans of a search or the points of a sweep on one
// cluster, simulate each distinct collective once.
//
// A key is the network (a number the cache gives each distinct network identity: the topology shape and
// path parameters a model was built from, printed exactly) and the collective (kind, NCCL algorithm and
// protocol, bytes, group layout), so evaluations on different clusters can share one cache without
// mixing their times. Thread-safe: a collective that one thread
// is simulating is waited for by the others, not simulated again; different collectives are simulated
// at the same time.
#pragma once

#include <cstdint>
#include <functional>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <tuple>

#include "core/units.hpp"

namespace dtsim::network {

class FlowCache {
 public:
  // kind, algorithm x protocol, bytes, group size, nodes, groups per node, node stride, members on the
  // busiest node (the flow level places an uneven group by it: flow_plan.hpp), a node-aware exchange's
  // fractions (graph::CommOp::node_aware, gpu_copies; -1 when absent), the group's NIC speed factor
  // (flow_job.hpp; the flow level refuses NVLink and uplink factors)
  using Collective = std::tuple<int, int, double, std::int64_t, std::int64_t, std::int64_t, std::int64_t,
                                std::int64_t, double, double, double>;
  using Key = std::pair<std::int64_t, Collective>;  // (network(), collective)

  // The number of the network with this identity: the same for equal identities, from 0 up.
  std::int64_t network(const std::string& identity);

  // The cached duration, or simulate() run once, stored and returned. An exception from simulate()
  // reaches every caller waiting for that key, and the key is not kept.
  core::TimeNs get(const Key& key, const std::function<core::TimeNs()>& simulate);

  // Collectives simulated so far (misses), and lookups answered from the cache.
  std::int64_t simulations() const;
  std::int64_t hits() const;

 private:
  mutable std::mutex mutex_;
  std::map<std::string, std::int64_t> networks_;
  std::map<Key, std::shared_future<core::TimeNs>> entries_;
  std::int64_t simulations_ = 0;
  std::int64_t hits_ = 0;
};

}  // namespace dtsim::network
