// A scenario built in code for unit tests, with round hardware numbers chosen to make expected values
// easy to derive by hand (they are not the shipped profiles).
#pragma once

#include <nlohmann/json.hpp>

#include "config/scenario.hpp"
#include "config/scenario_loader.hpp"
#include "network/analytic_model.hpp"
#include "results/evaluate.hpp"

namespace dtsim::testing {

inline config::Scenario fixture_scenario() {
  config::Scenario s;
  s.source = "fixture";
  s.name = "fixture";
  auto& m = s.model;
  m.layers = 24;
  m.hidden_size = 2048;
  m.heads = 16;
  m.kv_heads = 16;
  m.ffn_hidden_size = 8192;
  m.vocab_size = 51200;
  m.seq_length = 2048;
  m.attention = config::AttentionKind::flash;

  auto& g = s.gpu;
  g.id = "test-gpu";
  g.peak_tflops[static_cast<int>(config::Precision::bf16)] = 300.0;
  g.peak_tflops[static_cast<int>(config::Precision::fp16)] = 300.0;
  g.peak_tflops[static_cast<int>(config::Precision::fp32)] = 20.0;
  g.hbm_bytes = 80e9;
  g.hbm_bandwidth_gbytes_per_s = 2000;
  g.memory_efficiency = 0.5;  // 1e12 B/s achievable
  g.sm_count = 100;
  g.gemm = config::GemmCurve{0.8, 128, 128, 0.0, 0.9};
  g.attention_efficiency = 0.5;
  g.kernel_launch_us = 0.0;
  g.overlap_slowdown = 1.0;

  auto& n = s.node;
  n.id = "test-node";
  n.gpu = g.id;
  n.gpus_per_node = 8;
  n.intra_gbytes_per_s = 250;
  n.intra_efficiency = 0.8;  // 200e9 B/s
  n.intra_latency_us = 1.0;
  n.fabric = "test-fabric";
  n.nic_gbps = 200;
  n.nics_per_node = 8;

  auto& f = s.fabric;
  f.id = "test-fabric";
  f.efficiency = 0.5;  // 8 x 200 Gb/s x 0.5 = 100e9 B/s per node
  f.latency_us = 4.0;
  f.per_message_overhead_us = 1.0;

  s.cluster.node_id = n.id;
  s.cluster.nodes = 4;
  s.cluster.network.fabric = f.id;
  s.cluster.network.nic_gbps = 200;
  s.cluster.network.nics_per_node = 8;
  s.parallelism.data = 32;
  s.training.global_batch_size = 256;
  s.training.micro_batch_size = 1;
  s.training.precision = config::Precision::bf16;
  return s;
}

// The network path parameters of the fixture's cluster.
inline network::PathParams fixture_path() { return network::path_params(fixture_scenario()); }

// A scenario given as JSON, loaded with the shipped profiles and evaluated.
inline results::Result evaluate_json(const nlohmann::json& s, bool trace = false) {
  const config::Scenario scenario =
      config::load_scenario_text(s.dump(), "test", config::default_data_paths());
  return results::evaluate(scenario, results::EvaluateOptions{trace});
}

}  // namespace dtsim::testing
