// Failures of a DLRM (results/goodput.hpp, models/dlrm/dlrm.hpp's dlrm_state_bytes): the checkpoint
// saves every table and the dense part once, wherever they live; no replica holds the state, so the
// job restarts; a peer-memory checkpoint cannot hold tables on parameter servers.
#include <doctest/doctest.h>

#include <string>

#include "config/scenario_loader.hpp"
#include "dlrm_fixture.hpp"
#include "models/dlrm/dlrm.hpp"
#include "results/evaluate.hpp"

// Named, not anonymous: unity builds put several files in one translation unit.
namespace dlrm_failures_test {

// torchrec's Criteo 1TB DLRM on one p4d node, Adagrad, with the Llama 3 failure rates and a checkpoint
// to storage at 100 GB/s (`checkpoint` replaces the block), one failure-free day.
dtsim::config::Scenario criteo_with_failures(const std::string& placement, const std::string& checkpoint) {
  return dtsim::config::load_scenario_text(
      R"({"schema_version": 1, "name": "p", "model": {"kind": "dlrm", "preset": "torchrec-dlrm-criteo-1tb"},
          "cluster": {"node": "aws-p4d", "nodes": 1},
          "parallelism": {"embeddings": )" + placement + R"(},
          "training": {"global_batch_size": 16384, "precision": "fp32"},
          "failures": {"preset": "llama3-h100-2024", "restart_s": 600, "checkpoint": )" + checkpoint + R"(,
                       "train_days": 1}})",
      "p.json", dtsim::config::default_data_paths());
}

}  // namespace dlrm_failures_test

TEST_CASE("DLRM failures: a checkpoint saves the dense part and every table with their optimizer states") {
  auto s = dlrm_test::two_gpus();
  const auto& m = *s.dlrm;
  // Dense: bottom 13x64+64 + 64x128+128 = 9,216; the dot interaction of 5 vectors feeds the top MLP 128 +
  // 5x4/2 = 138 values: 138x64+64 + 64x1+1 = 8,961; 18,177 in all. Tables: 4 x 1000 x 128 = 512,000.
  REQUIRE(dtsim::models::dlrm_dense_parameters(m) == 18177.0);
  // SGD keeps no state: 4 bytes per dense parameter and per FP32 element.
  CHECK(dtsim::models::dlrm_state_bytes(m, dtsim::config::Optimizer::sgd) == 4.0 * (18177 + 512000));
  // Adagrad keeps one FP32 state for each: 8 bytes; Adam two: 12.
  CHECK(dtsim::models::dlrm_state_bytes(m, dtsim::config::Optimizer::adagrad) == 8.0 * (18177 + 512000));
  CHECK(dtsim::models::dlrm_state_bytes(m, dtsim::config::Optimizer::adam) == 12.0 * (18177 + 512000));
}

TEST_CASE("DLRM failures: the run's goodput comes from the whole-run simulation with that checkpoint") {
  const auto s = dlrm_failures_test::criteo_with_failures(R"({"sharding": "table_wise"})",
                                                          R"({"write_gbytes_per_s": 100})");
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE(r.status == dtsim::results::Status::ok);
  REQUIRE(r.goodput);
  REQUIRE(r.goodput->reason.empty());
  // 204,184,588 rows of 128 FP32 values and 2.37e6 dense parameters, Adagrad: 8 bytes per value.
  const double state = dtsim::models::dlrm_state_bytes(*s.dlrm, dtsim::config::Optimizer::adagrad);
  CHECK(state == doctest::Approx(8.0 * (204184588.0 * 128 + dtsim::models::dlrm_dense_parameters(*s.dlrm))));
  CHECK(r.goodput->checkpoint.state_bytes == doctest::Approx(state));
  CHECK(r.goodput->checkpoint.write_s == doctest::Approx(state / 100e9));
  // Failures cost time: the median run is at least the failure-free day.
  CHECK(r.goodput->wall_s.p50 >= 86400.0);
  CHECK(r.goodput->goodput.p50 <= 1.0);
}

TEST_CASE("DLRM failures: a peer-memory checkpoint cannot hold the tables of parameter servers") {
  const auto s = dlrm_failures_test::criteo_with_failures(
      R"({"placement": "remote", "servers": {"count": 4, "memory_gbytes": 512, "nic_gbps": 100,
          "row_gbytes_per_s": 50}})",
      R"({"target": "peer_memory"})");
  const auto r = dtsim::results::evaluate(s, {});
  REQUIRE(r.status == dtsim::results::Status::ok);
  REQUIRE(r.goodput);
  CHECK(r.goodput->reason.find("parameter servers") != std::string::npos);
}
