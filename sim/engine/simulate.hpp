// simulate(): replays a finalized task graph. Discrete events on an integer-nanosecond clock; a task
// starts when it is at the head of its stream and its dependencies are done; its duration comes from
// the compute model (compute ops) or the network model (communication ops), memoized per op. A compute
// task that starts while a communication stream of the same rank is busy runs `overlap_slowdown` times
// longer (shared SMs and HBM; GPU profile factor).
//
// The engine accumulates, per simulated rank, the time spent in each state: computing (by category),
// communicating with compute idle (exposed communication, by category), or idle. No globals: one call
// owns all of its state, so simulations may run concurrently on different threads.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "compute/compute_model.hpp"
#include "core/units.hpp"
#include "graph/task_graph.hpp"
#include "network/network_model.hpp"

namespace dtsim::engine {

struct Span {
  graph::TaskId task = 0;
  core::TimeNs start = 0;
  core::TimeNs end = 0;
};

// Time of one rank by what it was doing. Sums to the makespan.
struct RankTime {
  std::array<core::TimeNs, graph::kCategoryCount> busy_ns{};     // compute categories: compute stream busy
  std::array<core::TimeNs, graph::kCategoryCount> exposed_ns{};  // comm categories with compute idle
  core::TimeNs idle_ns = 0;                                      // nothing running
};

struct EngineOptions {
  bool record_spans = false;
  double overlap_slowdown = 1.0;
};

struct EngineResult {
  core::TimeNs makespan = 0;
  std::uint64_t events = 0;
  std::vector<RankTime> ranks;
  std::vector<Span> spans;  // only with record_spans, in order of completion
};

EngineResult simulate(const graph::TaskGraph& graph, const compute::ComputeModel& compute,
                      const network::NetworkModel& network, const EngineOptions& options);

}  // namespace dtsim::engine
