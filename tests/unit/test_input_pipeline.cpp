// The input pipeline (config/input_pipeline.hpp, models/input/input_pipeline.hpp): each resource's
// rate and the limit, derived in comments from the model's equations; and the load in the engines: a
// prefetched load beside the iteration (max), a synchronous one before it (sum), the data stall in
// the breakdown, for a transformer, a DLRM and a layer-table workload.
#include <doctest/doctest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "models/input/input_pipeline.hpp"
#include "reports/reports.hpp"
#include "results/evaluate.hpp"
#include "scenario_fixture.hpp"

// Named, not anonymous: unity builds put several files in one translation unit.
namespace input_test {

// The fixture (4 nodes of 8 GPUs, a global batch of 256) with an input pipeline on trainer hosts of
// 16 cores, 2 workers per GPU.
dtsim::config::Scenario with_input() {
  auto s = dtsim::testing::fixture_scenario();
  dtsim::config::InputPipelineSpec in;
  in.sample_bytes = 1e6;
  in.preprocess_core_s = 0.01;
  in.workers_per_gpu = 2;
  in.host_cpu_cores = 16;
  s.input = in;
  return s;
}

const dtsim::models::InputLimit* limit_of(const dtsim::models::InputRate& r, const std::string& resource) {
  const auto it = std::find_if(r.limits.begin(), r.limits.end(),
                               [&](const dtsim::models::InputLimit& l) { return l.resource == resource; });
  return it == r.limits.end() ? nullptr : &*it;
}

nlohmann::json llama_scenario() {
  return {{"schema_version", 1},
          {"name", "input"},
          {"model", {{"preset", "gpt-1.3b"}}},
          {"cluster", {{"node", "dgx-h100"}, {"nodes", 1}}},
          {"parallelism", {{"data", 8}}},
          {"training", {{"global_batch_size", 16}, {"micro_batch_size", 1}, {"precision", "bf16"}}}};
}

}  // namespace input_test

TEST_CASE("input: preprocessing on trainer hosts runs on min(workers x GPUs, cores) cores per node") {
  auto s = input_test::with_input();
  // 2 workers x 8 GPUs = 16 processes on 16 cores: 4 nodes x 16 cores / 0.01 core-s = 6400 samples/s;
  // no storage bandwidth stated, so preprocessing is the only limit. A batch of 256: 0.04 s.
  dtsim::models::InputRate r = dtsim::models::input_rate(s);
  REQUIRE(r.limits.size() == 1);
  CHECK(r.limited_by == "preprocessing");
  CHECK(r.samples_per_s == doctest::Approx(6400.0));
  CHECK(r.load_s == doctest::Approx(0.04));
  CHECK(r.prefetch);
  CHECK(r.prefetch_batches == 4);  // prefetch_factor 2 x 2 workers
  // One worker per GPU: 8 processes on 16 cores, 4 x 8 / 0.01 = 3200 samples/s.
  s.input->workers_per_gpu = 1;
  CHECK(dtsim::models::input_rate(s).samples_per_s == doctest::Approx(3200.0));
  // No workers: the training process preprocesses, one per GPU: 3200 samples/s too, not prefetched.
  s.input->workers_per_gpu = 0;
  r = dtsim::models::input_rate(s);
  CHECK(r.samples_per_s == doctest::Approx(3200.0));
  CHECK_FALSE(r.prefetch);
  // Deduplication by 4 divides the preprocessing per sample: 4 x 3200.
  s.input->dedup_factor = 4.0;
  CHECK(dtsim::models::input_rate(s).samples_per_s == doctest::Approx(12800.0));
}

TEST_CASE("input: storage passes its bandwidth over the bytes of the reads the cache misses") {
  auto s = input_test::with_input();
  s.input->storage_gbytes_per_s = 2.0;
  s.input->cache_hit = 0.5;
  // 2e9 B/s / (1e6 B x (1 - 0.5)) = 4000 samples/s, under preprocessing's 6400: storage limits.
  const dtsim::models::InputRate r = dtsim::models::input_rate(s);
  REQUIRE(input_test::limit_of(r, "storage") != nullptr);
  CHECK(input_test::limit_of(r, "storage")->samples_per_s == doctest::Approx(4000.0));
  CHECK(r.limited_by == "storage");
  CHECK(r.load_s == doctest::Approx(256.0 / 4000.0));
}

TEST_CASE("input: reader servers limit by their cores and NICs, and the trainers' NICs") {
  auto s = input_test::with_input();
  s.input->host_cpu_cores.reset();
  s.input->reader_servers = dtsim::config::ReaderServers{2, 32, 8.0};
  s.input->tensor_bytes = 1e5;
  // preprocessing: 2 servers x 32 cores / 0.01 = 6400 samples/s; reader NICs: 2 x 8 Gb/s = 2e9 B/s
  // / 1e5 B = 20000 samples/s; trainer NICs: 4 nodes x 8 NICs x 200 Gb/s = 8e11 B/s / 1e5 = 8e6.
  const dtsim::models::InputRate r = dtsim::models::input_rate(s);
  REQUIRE(r.limits.size() == 3);
  CHECK(input_test::limit_of(r, "preprocessing")->samples_per_s == doctest::Approx(6400.0));
  CHECK(input_test::limit_of(r, "reader NICs")->samples_per_s == doctest::Approx(20000.0));
  CHECK(input_test::limit_of(r, "trainer NICs")->samples_per_s == doctest::Approx(8e6));
  CHECK(r.limited_by == "preprocessing");
}

TEST_CASE("input: a pipeline with nothing that costs leaves the iteration as it was") {
  auto s = input_test::with_input();
  s.input->preprocess_core_s = 0.0;  // and no storage bandwidth: no resource has a cost
  const dtsim::models::InputRate r = dtsim::models::input_rate(s);
  CHECK(r.limits.empty());
  CHECK(r.limited_by.empty());
  CHECK(r.load_s == 0.0);
  auto plain = dtsim::testing::fixture_scenario();
  const auto with = dtsim::results::evaluate(s, {});
  const auto without = dtsim::results::evaluate(plain, {});
  CHECK(with.iteration_time_s == without.iteration_time_s);
  CHECK(with.engine.tasks == without.engine.tasks);
}

TEST_CASE("input: on the engine a prefetched load takes max(iteration, load), a synchronous one their sum") {
  nlohmann::json j = input_test::llama_scenario();
  const auto base = dtsim::testing::evaluate_json(j);
  REQUIRE(base.status == dtsim::results::Status::ok);
  const double t = base.iteration_time_s;
  // Storage at 16 samples x 1e6 B / (2 t) B/s: the batch takes 2 t to load, longer than the rest.
  j["input"] = {{"sample_bytes", 1e6}, {"workers_per_gpu", 2}, {"storage_gbytes_per_s", 16.0 * 1e6 / (2.0 * t) / 1e9}};
  const auto prefetched = dtsim::testing::evaluate_json(j);
  REQUIRE(prefetched.input.has_value());
  CHECK(prefetched.input->load_s == doctest::Approx(2.0 * t));
  // The iteration waits for the load: 2 t, of which the GPU waits for data about t (its own work, t,
  // runs beside the load; an exchange still running then counts as that exchange).
  CHECK(prefetched.iteration_time_s == doctest::Approx(2.0 * t).epsilon(1e-6));
  CHECK(prefetched.breakdown.data_stall_s == doctest::Approx(t).epsilon(0.01));
  CHECK(prefetched.breakdown.data_stall_s <= t + 1e-9);
  // Without workers the training process loads first: t + 2 t.
  j["input"]["workers_per_gpu"] = 0;
  const auto synchronous = dtsim::testing::evaluate_json(j);
  CHECK(synchronous.iteration_time_s == doctest::Approx(3.0 * t).epsilon(1e-6));
  CHECK(synchronous.breakdown.data_stall_s == doctest::Approx(2.0 * t).epsilon(0.01));
  // A load shorter than the iteration hides behind it: the iteration is unchanged.
  j["input"] = {{"sample_bytes", 1e6}, {"workers_per_gpu", 2}, {"storage_gbytes_per_s", 16.0 * 1e6 / (0.5 * t) / 1e9}};
  const auto hidden = dtsim::testing::evaluate_json(j);
  CHECK(hidden.iteration_time_s == doctest::Approx(t).epsilon(1e-9));
  CHECK(hidden.breakdown.data_stall_s == 0.0);
}

TEST_CASE("input: a DLRM's GPUs each wait for their part of the batch") {
  nlohmann::json j = {{"schema_version", 1},
                      {"name", "dlrm input"},
                      {"model", {{"kind", "dlrm"}, {"preset", "torchrec-dlrm-criteo-1tb"}}},
                      {"cluster", {{"node", "aws-p4d"}, {"nodes", 1}}},
                      {"training", {{"global_batch_size", 16384}, {"precision", "fp32"}}}};
  const auto base = dtsim::testing::evaluate_json(j);
  REQUIRE(base.status == dtsim::results::Status::ok);
  const double t = base.iteration_time_s;
  // 1 worker x 8 GPUs = 8 cores of the node's 48: 8 / c samples/s with c = 8 x 3 t / 16384, so that the
  // batch takes 3 t.
  j["input"] = {{"sample_bytes", 160}, {"workers_per_gpu", 1}, {"preprocess_core_s", 8.0 * 3.0 * t / 16384.0}};
  const auto r = dtsim::testing::evaluate_json(j);
  REQUIRE(r.status == dtsim::results::Status::ok);
  CHECK(r.input->limited_by == "preprocessing");
  CHECK(r.iteration_time_s == doctest::Approx(3.0 * t).epsilon(1e-6));
  CHECK(r.breakdown.data_stall_s > 1.5 * t);
}

TEST_CASE("input: a layer-table worker's step waits for its batch, prefetched or loaded before it") {
  nlohmann::json j = {{"schema_version", 1},
                      {"name", "resnet input"},
                      {"model", {{"layer_table", "resnet-50"}}},
                      {"cluster", {{"node", "dgx-1-v100"}, {"nodes", 2}}},
                      {"training", {{"global_batch_size", 1024}, {"precision", "fp16"}}}};
  const auto base = dtsim::testing::evaluate_json(j);
  REQUIRE(base.status == dtsim::results::Status::ok);
  const double t = base.iteration_time_s;
  // Prefetching workers on 2 nodes x 40 cores (5 workers x 8 GPUs = 40 processes): 80 / c samples/s.
  // With c = 80 x 2 t / 1024 the batch takes 2 t: each worker's loader sets the pace, a step every 2 t.
  j["input"] = {{"sample_bytes", 110000}, {"workers_per_gpu", 5}, {"preprocess_core_s", 80.0 * 2.0 * t / 1024.0}};
  const auto slow = dtsim::testing::evaluate_json(j);
  REQUIRE(slow.status == dtsim::results::Status::ok);
  CHECK(slow.input->load_s == doctest::Approx(2.0 * t));
  CHECK(slow.iteration_time_s == doctest::Approx(2.0 * t).epsilon(1e-3));
  CHECK(slow.breakdown.data_stall_s == doctest::Approx(t).epsilon(0.01));
  // Loaded before each step by the training process (8 of the 40 cores per node): the load takes
  // 2 t x 40 / 8 = 10 t, then the step: 11 t.
  j["input"]["workers_per_gpu"] = 0;
  const auto synchronous = dtsim::testing::evaluate_json(j);
  CHECK(synchronous.iteration_time_s == doctest::Approx(11.0 * t).epsilon(1e-3));
  // A quick loader (a tenth of the step) hides behind the steps.
  j["input"] = {{"sample_bytes", 110000}, {"workers_per_gpu", 5}, {"preprocess_core_s", 80.0 * 0.1 * t / 1024.0}};
  const auto quick = dtsim::testing::evaluate_json(j);
  CHECK(quick.iteration_time_s == doctest::Approx(t).epsilon(1e-6));
  CHECK(quick.breakdown.data_stall_s == 0.0);
}

TEST_CASE("input: the reports show the rate, what limits it and the data stall") {
  nlohmann::json j = input_test::llama_scenario();
  // Storage at 1 GB/s for 1e6-byte samples: 1000 samples/s, 16 samples in 0.016 s.
  j["input"] = {{"sample_bytes", 1e6}, {"workers_per_gpu", 0}, {"storage_gbytes_per_s", 1.0}};
  const auto r = dtsim::testing::evaluate_json(j);
  REQUIRE(r.status == dtsim::results::Status::ok);
  std::ostringstream text;
  dtsim::reports::write_text(text, r);
  CHECK(text.str().find("input        1000 samples/s, limited by storage: a global batch in 0.016000 s") !=
        std::string::npos);
  CHECK(text.str().find("waiting for input data") != std::string::npos);
  const nlohmann::ordered_json json = dtsim::reports::result_json(r);
  CHECK(json["input"]["limited_by"] == "storage");
  CHECK(json["input"]["samples_per_s"] == doctest::Approx(1000.0));
  CHECK(json["breakdown_s"]["data_stall"].get<double>() == doctest::Approx(r.breakdown.data_stall_s));
  CHECK(json["scenario"]["input"]["workers_per_gpu"] == 0);
  CHECK_FALSE(json["scenario"]["input"].contains("prefetch_factor"));
}

TEST_CASE("input: sizing says how many workers, cores, reader servers and how much storage feed the GPUs") {
  auto s = input_test::with_input();
  s.input->storage_gbytes_per_s = 2.0;
  // Demand 10000 samples/s on 4 nodes of 8 GPUs, 0.01 core-s and 1e6 bytes per sample:
  //   storage: 10000 x 1e6 / 1e9 = 10 GB/s; cores per node: 10000 x 0.01 / 4 = 25; workers per GPU:
  //   ceil(25 / 8) = 4.
  dtsim::models::InputSizing z = dtsim::models::size_input(s, 10000.0);
  REQUIRE(z.needs.size() == 3);
  CHECK(z.needs[0].quantity == "storage GB/s");
  CHECK(z.needs[0].stated == 2.0);
  CHECK(z.needs[0].needed == doctest::Approx(10.0));
  CHECK(z.needs[1].quantity == "data-loader workers per GPU");
  CHECK(z.needs[1].stated == 2.0);
  CHECK(z.needs[1].needed == 4.0);
  CHECK(z.needs[2].quantity == "host CPU cores per node");
  CHECK(z.needs[2].stated == 16.0);
  CHECK(z.needs[2].needed == 25.0);
  // Exactly the capacity needs no more: 6400 samples/s is what 16 cores per node supply (16 x 4 / 0.01).
  z = dtsim::models::size_input(s, 6400.0);
  CHECK(z.needs[2].needed == 16.0);
  CHECK(z.needs[1].needed == 2.0);
  // Reader servers of 32 cores and 8 Gb/s sending 1e5 bytes per sample: ceil(10000 x 0.01 / 32) = 4 for
  // their cores, ceil(10000 x 1e5 / 1e9) = 1 for their NICs; the trainers receive 10000 x 1e5 x 8 / 4 /
  // 1e9 = 2 Gb/s per node of their 8 x 200.
  s.input->host_cpu_cores.reset();
  s.input->reader_servers = dtsim::config::ReaderServers{2, 32, 8.0};
  s.input->tensor_bytes = 1e5;
  z = dtsim::models::size_input(s, 10000.0);
  REQUIRE(z.needs.size() == 4);
  CHECK(z.needs[1].quantity == "reader servers (cores)");
  CHECK(z.needs[1].needed == 4.0);
  CHECK(z.needs[2].quantity == "reader servers (NICs)");
  CHECK(z.needs[2].needed == 1.0);
  CHECK(z.needs[3].quantity == "trainer NIC Gb/s per node");
  CHECK(z.needs[3].stated == 1600.0);
  CHECK(z.needs[3].needed == doctest::Approx(2.0));
}

TEST_CASE("input: a result's sizing feeds the GPUs' own rate, the iteration without its data stall") {
  nlohmann::json j = input_test::llama_scenario();
  j["input"] = {{"sample_bytes", 1e6}, {"workers_per_gpu", 2}, {"storage_gbytes_per_s", 0.001}};
  const auto r = dtsim::testing::evaluate_json(j);
  REQUIRE(r.input_sizing.has_value());
  const double demand = 16.0 / (r.iteration_time_s - r.breakdown.data_stall_s);
  CHECK(r.input_sizing->demand_samples_per_s == doctest::Approx(demand));
  CHECK(r.input_sizing->needs[0].needed == doctest::Approx(demand * 1e6 / 1e9));
}
