// The DLRM tests' scenario: the fixture's GPU (1e12 B/s of HBM, 80e9 bytes) on one node of two, a
// global batch of 1000 (500 per GPU), four tables of 1000 rows of 128 FP32 columns with 4, 3, 2 and 1
// ids per sample, SGD (no state). The node's NICs move 8 x 200 Gb/s x 0.5 = 100e9 B/s (50e9 per GPU);
// a message's latency is 4 + 1 us.
#pragma once

#include <fmt/format.h>

#include "config/scenario.hpp"
#include "scenario_fixture.hpp"

namespace dlrm_test {

inline dtsim::config::Scenario two_gpus() {
  auto s = dtsim::testing::fixture_scenario();
  s.cluster.nodes = 1;
  s.node.gpus_per_node = 2;
  s.parallelism.data = 2;
  s.training.global_batch_size = 1000;
  s.training.precision = dtsim::config::Precision::fp32;
  s.training.optimizer = dtsim::config::Optimizer::sgd;
  s.node.host_memory_bytes = 1e12;
  dtsim::config::DlrmSpec m;
  m.dense_features = 13;
  m.bottom_mlp = {64, 128};
  m.top_mlp = {64, 1};
  for (int i = 0; i < 4; ++i) m.tables.push_back({fmt::format("t{}", i), 1000, 128, 4.0 - i, 0.0});
  s.dlrm = m;
  return s;
}

}  // namespace dlrm_test
