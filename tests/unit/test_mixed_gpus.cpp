// Mixed GPU generations (config/mixed_gpus.hpp, cluster.mixed_gpus): each rank's kernels costed by its
// own GPU's compute model (results/evaluate.cpp, rank_compute_models; engine/simulate.hpp, "GPU
// speeds"), the memory limit of the smallest GPU, and the mean peak of the job's GPUs for MFU.
#include <doctest/doctest.h>

#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "config/mixed_gpus.hpp"
#include "scenario_fixture.hpp"

namespace {

// Llama 2 7B on 4 DGX A100 nodes, TP 2 x DP 16, every rank simulated, nodes per `mixed` (none: null).
nlohmann::json mixed_job(const nlohmann::json& mixed) {
  nlohmann::json s = {{"schema_version", 1},
                      {"name", "mixed gpus"},
                      {"model", {{"preset", "llama2-7b"}}},
                      {"cluster", {{"node", "dgx-a100"}, {"nodes", 4}}},
                      {"parallelism", {{"data", 16}, {"tensor", 2}, {"sequence_parallel", true}}},
                      {"training", {{"global_batch_size", 64}, {"micro_batch_size", 2}}},
                      {"simulation", {{"ranks", "all"}}}};
  if (!mixed.is_null()) s["cluster"]["mixed_gpus"] = mixed;
  return s;
}

}  // namespace

TEST_CASE("mixed GPUs: each rank's entry is the one that covers its node") {
  // 3 nodes of 4 GPUs: node 1 in entry 0, node 2 in entry 1, node 0 the node profile's (-1).
  dtsim::config::MixedGpus a;
  a.first_node = 1;
  dtsim::config::MixedGpus b;
  b.first_node = 2;
  const auto of = dtsim::config::rank_gpu_entries({a, b}, 12, 4);
  REQUIRE(of.size() == 12);
  for (int r = 0; r < 4; ++r) CHECK(of[r] == -1);
  for (int r = 4; r < 8; ++r) CHECK(of[r] == 0);
  for (int r = 8; r < 12; ++r) CHECK(of[r] == 1);
  CHECK(dtsim::config::rank_gpu_entries({}, 12, 4).empty());
}

TEST_CASE("mixed GPUs: the distinct (GPU, speed) kinds are counted without a per-rank array") {
  // 2^34 ranks of 8 per node (a mistyped node count): node 2-3 H100 (entry 0), GPU 3 of node 0 at 0.8.
  dtsim::config::MixedGpus h100;
  h100.first_node = 2;
  h100.nodes = 2;
  dtsim::config::SpeedFactor slow;
  slow.node = 0;
  slow.gpu = 3;
  slow.compute = 0.8;
  const std::int64_t ranks = std::int64_t{1} << 34;
  const auto kinds = dtsim::config::distinct_rank_kinds({h100}, {slow}, ranks, 8);
  // The node profile's GPU at 1 and at 0.8, and entry 0's at 1.
  CHECK(kinds == std::set<std::pair<int, double>>{{-1, 0.8}, {-1, 1.0}, {0, 1.0}});
  // The same as a per-rank count on a small cluster (4 nodes).
  const auto of = dtsim::config::rank_gpu_entries({h100}, 32, 8);
  const auto speeds = dtsim::config::rank_compute_speeds({slow}, 32, 8);
  std::set<std::pair<int, double>> counted;
  for (std::size_t r = 0; r < 32; ++r) counted.emplace(of[r], speeds[r]);
  CHECK(dtsim::config::distinct_rank_kinds({h100}, {slow}, 32, 8) == counted);
}

TEST_CASE("mixed GPUs: faster GPUs beside slower ones wait for them, MFU counts the peak of each") {
  using dtsim::results::Status;
  const auto a100 = dtsim::testing::evaluate_json(mixed_job(nullptr));
  // Naming the node profile's own GPU changes nothing, to the byte.
  const auto same = dtsim::testing::evaluate_json(
      mixed_job({{{"first_node", 0}, {"nodes", 4}, {"gpu", "a100-sxm4-80gb"}}}));
  const auto h100 = dtsim::testing::evaluate_json(
      mixed_job({{{"first_node", 0}, {"nodes", 4}, {"gpu", "h100-sxm5-80gb"}}}));
  const auto half = dtsim::testing::evaluate_json(
      mixed_job({{{"first_node", 2}, {"nodes", 2}, {"gpu", "h100-sxm5-80gb"}}}));
  REQUIRE(a100.status == Status::ok);
  REQUIRE(h100.status == Status::ok);
  REQUIRE(half.status == Status::ok);
  CHECK(same.iteration_time_s == a100.iteration_time_s);
  CHECK(same.flops.mfu == a100.flops.mfu);
  MESSAGE("iteration: A100 " << a100.iteration_time_s << " s, H100 GPUs in A100 servers " << h100.iteration_time_s
                             << " s, half of each " << half.iteration_time_s << " s");
  CHECK(h100.breakdown.forward_s + h100.breakdown.backward_s <
        a100.breakdown.forward_s + a100.breakdown.backward_s);
  // Every tensor group lies inside a node (one kind of GPU); every data-parallel reduction spans all
  // four nodes and starts when its slowest member's bucket is ready, on the same links as in the A100
  // job: the A100 ranks run as they do alone, and the iteration ends with them.
  CHECK(half.iteration_time_s == doctest::Approx(a100.iteration_time_s).epsilon(1e-3));
  // The H100 ranks wait for them, idle: the mean over ranks shows it.
  CHECK(half.breakdown.pipeline_bubble_s > a100.breakdown.pipeline_bubble_s);
  // MFU = model FLOPs / (t x GPUs x mean peak): half the GPUs at each profile's peak.
  const double mean_peak = (a100.flops.peak_tflops_per_gpu + h100.flops.peak_tflops_per_gpu) / 2;
  CHECK(h100.flops.peak_tflops_per_gpu > a100.flops.peak_tflops_per_gpu);
  CHECK(half.flops.peak_tflops_per_gpu == doctest::Approx(mean_peak));
  CHECK(half.flops.mfu ==
        doctest::Approx(a100.flops.mfu * a100.iteration_time_s / half.iteration_time_s *
                        a100.flops.peak_tflops_per_gpu / mean_peak));
}

TEST_CASE("mixed GPUs: a plan fits when it fits the GPU with the least memory") {
  // One node of A100 40GB among 80GB ones: the capacity is 40 GB's.
  const auto base = dtsim::testing::evaluate_json(mixed_job(nullptr));
  const auto small = dtsim::testing::evaluate_json(mixed_job({{{"first_node", 3}, {"gpu", "a100-sxm4-40gb"}}}));
  CHECK(small.memory.capacity_bytes_per_gpu < base.memory.capacity_bytes_per_gpu);
  CHECK(small.memory.peak_bytes_per_gpu == base.memory.peak_bytes_per_gpu);
  CHECK(small.memory.fits == (small.memory.peak_bytes_per_gpu <= small.memory.capacity_bytes_per_gpu));
  MESSAGE("needs " << small.memory.peak_bytes_per_gpu / (1 << 30) << " GiB; smallest GPU "
                   << small.memory.capacity_bytes_per_gpu / (1 << 30) << " GiB");
}

TEST_CASE("mixed GPUs: every GPU must run the scenario's precision") {
  // FP8 on DGX H100 nodes with A100 GPUs in node 3: the A100 profile has no FP8 peak.
  nlohmann::json s = mixed_job({{{"first_node", 3}, {"gpu", "a100-sxm4-80gb"}}});
  s["cluster"]["node"] = "dgx-h100";
  s["training"]["precision"] = "fp8";
  const auto r = dtsim::testing::evaluate_json(s);
  CHECK(r.status == dtsim::results::Status::infeasible);
  CHECK(r.reason == "a100-sxm4-80gb (cluster.mixed_gpus, nodes 3-3) has no fp8 support (no peak in its profile)");
}
