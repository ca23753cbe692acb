// Engine test fixtures: a fake network whose all-reduce of B bytes takes B ns, a GPU on which a
// memory-class op of B bytes takes B ns, and helpers to build and run small task graphs.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <initializer_list>
#include <string>

#include "compute/compute_model.hpp"
#include "engine/simulate.hpp"
#include "graph/task_graph.hpp"
#include "network/network_model.hpp"

namespace dtsim::testing::engine_fixture {

using namespace dtsim;
using core::TimeNs;
using graph::Category;
using graph::StreamKind;
using graph::TaskId;

// Communication op durations: `bytes` nanoseconds. Counts its calls to check memoization.
class FakeNetwork : public network::NetworkModel {
 public:
  TimeNs duration(const graph::CommOp& op) const override {
    ++calls_;
    return static_cast<TimeNs>(op.bytes);
  }
  const char* name() const override { return "fake"; }
  int calls() const { return calls_; }

 private:
  mutable int calls_ = 0;
};

// A GPU on which a memory-class op of B bytes takes B ns: 1 GB/s HBM at full efficiency and no launch
// cost, so t = bytes / (hbm_bw * mem_eff) + kernels * launch = B ns.
inline config::GpuProfile ns_per_byte_gpu() {
  config::GpuProfile gpu;
  gpu.id = "test";
  for (auto& peak : gpu.peak_tflops) peak = 100.0;
  gpu.hbm_bandwidth_gbytes_per_s = 1.0;
  gpu.memory_efficiency = 1.0;
  gpu.gemm = config::GemmCurve{0.8, 128, 128, 64.0, 0.9};
  gpu.attention_efficiency = 0.5;
  gpu.kernel_launch_us = 0.0;
  return gpu;
}

struct Models {
  config::GpuProfile gpu = ns_per_byte_gpu();
  compute::ComputeModel compute{gpu, config::Precision::bf16};
  FakeNetwork network;
};

inline graph::Op comm(double ns) {  // an all-reduce
  graph::CommOp op;
  op.bytes = ns;
  return op;
}

inline graph::Op memory(double ns) {  // a memory-class kernel
  graph::ComputeOp op;
  op.bytes = ns;
  return op;
}

inline TaskId add(graph::TaskGraph& g, graph::StreamId stream, graph::OpId op, Category category,
                  const std::string& label, std::initializer_list<TaskId> deps = {}) {
  const TaskId t = g.add_task(graph::Task{op, stream, category, g.add_label(label), -1});
  for (const TaskId d : deps) g.add_dependency(d, t);
  return t;
}

inline TaskId add(graph::TaskGraph& g, graph::StreamId stream, const graph::Op& op, Category category,
                  const std::string& label, std::initializer_list<TaskId> deps = {}) {
  return add(g, stream, g.add_op(op), category, label, deps);
}

inline engine::EngineResult run(graph::TaskGraph& g, const Models& m, double slowdown = 1.0,
                                double host_ns_per_kernel = 0.0, double host_ns_per_tensor_op = 0.0) {
  g.finalize();
  g.validate();
  return engine::simulate(g, m.compute, m.network,
                          engine::EngineOptions{true, slowdown, host_ns_per_kernel, host_ns_per_tensor_op});
}

inline engine::Span span_of(const engine::EngineResult& r, TaskId t) {
  const auto it =
      std::find_if(r.spans.begin(), r.spans.end(), [&](const engine::Span& s) { return s.task == t; });
  REQUIRE(it != r.spans.end());
  return *it;
}

inline TimeNs total(const engine::RankTime& rt) {
  TimeNs sum = rt.idle_ns + rt.host_wait_ns;
  for (const TimeNs v : rt.busy_ns) sum += v;
  for (const TimeNs v : rt.exposed_ns) sum += v;
  return sum;
}

inline TimeNs busy(const engine::RankTime& rt, Category c) { return rt.busy_ns[static_cast<int>(c)]; }
inline TimeNs exposed(const engine::RankTime& rt, Category c) { return rt.exposed_ns[static_cast<int>(c)]; }

}  // namespace dtsim::testing::engine_fixture
